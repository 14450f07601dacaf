"""Shared parts of the proactive tests: the devices, a companion with a piper voice, calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from homeassistant.components.assist_pipeline.pipeline import (
    async_get_pipeline,
    async_update_pipeline,
)
from homeassistant.components.assist_satellite import AssistSatelliteEntityFeature
from homeassistant.const import CONF_API_KEY, CONF_HOST, CONF_PORT
from homeassistant.core import Event, HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_LANGUAGES,
    CONF_MODEL,
    CONF_PROFILE,
    CONF_VOICE,
    DOMAIN,
    EVENT_SPOKE,
    SUBENTRY_CONVERSATION,
    SUBENTRY_TTS,
)
from tests.ha.personakit import agents_by_title
from tests.ha.speakers import SpeakerPlayer, SpeakingSatellite, setup_speakers
from tests.support.llm_server import LLMServer
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 20.0
CONVERSE = AssistSatelliteEntityFeature.ANNOUNCE | AssistSatelliteEntityFeature.START_CONVERSATION
KITCHEN = "assist_satellite.kitchen"
HALL = "assist_satellite.hall"
LOUNGE = "media_player.lounge"
ATTIC = "media_player.attic"
VOICE = "en_US-joe-medium"

type Devices = dict[str, SpeakingSatellite | SpeakerPlayer]


@pytest.fixture
async def devices(hass: HomeAssistant) -> Devices:
    """Load a conversing satellite, an announcing one, a media player and a silent one."""
    hass.config.internal_url = "http://homeassistant.test:8123"
    assert await async_setup_component(hass, "assist_pipeline", {})
    found: Devices = {
        KITCHEN: SpeakingSatellite("kitchen", CONVERSE),
        HALL: SpeakingSatellite("hall", AssistSatelliteEntityFeature.ANNOUNCE),
        LOUNGE: SpeakerPlayer("lounge"),
        ATTIC: SpeakerPlayer("attic", reports_state=False),
    }
    satellites = [d for d in found.values() if isinstance(d, SpeakingSatellite)]
    players = [d for d in found.values() if isinstance(d, SpeakerPlayer)]
    await setup_speakers(hass, satellites, players)
    return found


async def setup_companion(
    hass: HomeAssistant, server: LLMServer, proxy: WyomingProxy, profile: str = "default"
) -> tuple[MockConfigEntry, str]:
    """Set up one persona and a piper voice; the Assist pipeline talks to the persona."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="test-model",
        data={CONF_BASE_URL: server.url, CONF_API_KEY: "", CONF_MODEL: "test-model"},
        subentries_data=[
            {
                "subentry_type": SUBENTRY_CONVERSATION,
                "data": {CONF_PROFILE: profile},
                "title": "Companion",
                "unique_id": None,
            },
            {
                "subentry_type": SUBENTRY_TTS,
                "data": {
                    CONF_HOST: proxy.host,
                    CONF_PORT: proxy.port,
                    CONF_VOICE: VOICE,
                    CONF_LANGUAGES: ["en_US"],
                },
                "title": VOICE,
                "unique_id": None,
            },
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    agent = agents_by_title(hass, entry)["Companion"]
    await async_update_pipeline(hass, async_get_pipeline(hass), conversation_engine=agent)
    return entry, agent


def spoke_events(hass: HomeAssistant) -> list[Event]:
    """Collect every companion_agent_spoke event from now on."""
    events: list[Event] = []
    hass.bus.async_listen(EVENT_SPOKE, events.append)
    return events


async def start_chat(hass: HomeAssistant, **data: object) -> list[dict[str, object]]:
    """Call start_chat and return what each target heard."""
    response = await asyncio.wait_for(
        hass.services.async_call(
            DOMAIN, "start_chat", dict(data), blocking=True, return_response=True
        ),
        TIMEOUT,
    )
    assert response is not None
    chats = response["chats"]
    assert isinstance(chats, list)
    return [dict(chat) for chat in chats if isinstance(chat, dict)]


def assistant_text(turn: dict[str, object]) -> str:
    """Return what a stored turn's assistant messages say."""
    rows = turn["messages"]
    assert isinstance(rows, list)
    return "".join(str(row["content"]) for row in rows if row["role"] == "assistant")


def stored_turns(hass: HomeAssistant) -> list[dict[str, object]]:
    """Return every stored turn of every persona, read from disk."""
    folder = Path(hass.config.path(DOMAIN)) / "conversations"
    turns: list[dict[str, object]] = []
    for path in folder.rglob("*.json"):
        turns.extend(json.loads(path.read_text("utf-8"))["turns"])
    return turns
