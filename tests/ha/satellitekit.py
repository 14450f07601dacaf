"""Helpers for satellite tests: an entry with a persona, voice, STT and satellite; its pipeline.

The pipeline is the preferred one, so the satellite's *Assistant* select (``preferred``)
runs it: STT (whisper, or a scripted ASR server), our persona, our piper voice.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from homeassistant.components.assist_pipeline.pipeline import (
    KEY_ASSIST_PIPELINE,
    async_create_default_pipeline,
    async_update_pipeline,
)
from homeassistant.const import CONF_API_KEY, CONF_HOST, CONF_LLM_HASS_API, CONF_PORT
from homeassistant.core import HomeAssistant, State
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_LANGUAGES,
    CONF_MEMORY_ENVIRONMENT,
    CONF_MODEL,
    CONF_PROFILE,
    CONF_VOICE,
    DOMAIN,
    SUBENTRY_CONVERSATION,
    SUBENTRY_SATELLITE,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer

TIMEOUT = 30.0


def satellite_subentry(host: str, port: int, title: str = "Kitchen satellite") -> dict[str, object]:
    """Return the subentry data of a satellite at ``host:port``."""
    return {
        "subentry_type": SUBENTRY_SATELLITE,
        "data": {CONF_HOST: host, CONF_PORT: port},
        "title": title,
        "unique_id": None,
    }


def companion_entry(
    server: LLMServer,
    piper: PiperPeer,
    stt: tuple[str, int, str],
    satellite: tuple[str, int],
    *,
    tools: bool = False,
) -> MockConfigEntry:
    """Return an entry with a persona, a piper voice, an STT model and one satellite."""
    host, port, model = stt
    persona: dict[str, object] = {CONF_PROFILE: "default"}
    if tools:
        persona[CONF_LLM_HASS_API] = [llm.LLM_API_ASSIST]
    return MockConfigEntry(
        domain=DOMAIN,
        title="test-model",
        data={
            CONF_BASE_URL: server.url,
            CONF_API_KEY: "",
            CONF_MODEL: "test-model",
            CONF_MEMORY_ENVIRONMENT: "test",
        },
        subentries_data=[
            {
                "subentry_type": SUBENTRY_CONVERSATION,
                "data": persona,
                "title": "Companion",
                "unique_id": None,
            },
            {
                "subentry_type": SUBENTRY_TTS,
                "data": {
                    CONF_HOST: piper.host,
                    CONF_PORT: piper.port,
                    CONF_VOICE: piper.voice,
                    CONF_LANGUAGES: ["en_US"],
                },
                "title": piper.voice,
                "unique_id": None,
            },
            {
                "subentry_type": SUBENTRY_STT,
                "data": {
                    CONF_HOST: host,
                    CONF_PORT: port,
                    CONF_MODEL: model,
                    CONF_LANGUAGES: ["en"],
                },
                "title": "speech to text",
                "unique_id": None,
            },
            satellite_subentry(*satellite),
        ],
    )


def entity_of(hass: HomeAssistant, entry: MockConfigEntry, domain: str) -> str:
    """Return the entry's one entity of ``domain``."""
    (entity_id,) = [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == domain
    ]
    return entity_id


async def setup_companion(hass: HomeAssistant, entry: MockConfigEntry, voice: str) -> str:
    """Set up Assist and the entry; make its STT, agent and ``voice`` the preferred pipeline.

    Return the satellite's entity id.
    """
    assert await async_setup_component(hass, "conversation", {})
    assert await async_setup_component(hass, "assist_pipeline", {})
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    pipeline = await async_create_default_pipeline(
        hass,
        stt_engine_id=entity_of(hass, entry, "stt"),
        tts_engine_id=entity_of(hass, entry, "tts"),
        pipeline_name="Companion",
    )
    assert pipeline is not None
    await async_update_pipeline(
        hass,
        pipeline,
        conversation_engine=entity_of(hass, entry, "conversation"),
        conversation_language="en",
        prefer_local_intents=False,
        tts_voice=voice,
    )
    hass.data[KEY_ASSIST_PIPELINE].pipeline_store.async_set_preferred_item(pipeline.id)
    return entity_of(hass, entry, "assist_satellite")


async def wait_state(
    hass: HomeAssistant, entity_id: str, state: str, within: float = TIMEOUT
) -> State:
    """Wait until ``entity_id`` is in ``state``; return that state."""
    async with asyncio.timeout(within):
        while True:
            current = hass.states.get(entity_id)
            if current is not None and current.state == state:
                return current
            await asyncio.sleep(0.02)


def stored_turns(hass: HomeAssistant) -> list[dict[str, object]]:
    """Return every stored turn of the entry's personas, read from disk."""
    folder = Path(hass.config.path(DOMAIN)) / "conversations"
    turns: list[dict[str, object]] = []
    for path in sorted(folder.rglob("*.json")):
        turns.extend(json.loads(path.read_text("utf-8"))["turns"])
    return turns


def said(turn: dict[str, object]) -> str:
    """Return what the companion said in a stored turn."""
    messages = turn["messages"]
    assert isinstance(messages, list)
    return "".join(str(m["content"]) for m in messages if m["role"] == "assistant")
