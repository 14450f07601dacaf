"""HA's own Wyoming satellite for tests: its integration connected to the scripted satellite.

``create_pipeline`` makes an Assist pipeline (our agent, a TTS, and speech to text if the
run starts from audio); ``setup_ha_satellite`` adds HA's Wyoming integration for a
``RealTimeSatellite``, points its *Assistant* select at that pipeline and waits until HA
is connected; ``setup_ha_voice`` adds HA's own Wyoming TTS on a Piper.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from homeassistant.components.assist_pipeline.pipeline import (  # requirements_test.txt
    KEY_ASSIST_PIPELINE,
    Pipeline,
)
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component

from tests.support.realtime_satellite import RealTimeSatellite

TIMEOUT = 20.0
POLL = 0.02


async def create_pipeline(
    hass: HomeAssistant, name: str, agent: str, tts: str, stt: str | None = None
) -> Pipeline:
    """Create an Assist pipeline: ``agent`` answers, ``tts`` speaks, ``stt`` listens."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    store = hass.data[KEY_ASSIST_PIPELINE].pipeline_store
    return await store.async_create_item(
        {
            "name": name,
            "conversation_engine": agent,
            "conversation_language": "en",
            "language": "en",
            "stt_engine": stt,
            "stt_language": "en" if stt is not None else None,
            "tts_engine": tts,
            "tts_language": "en_US",
            "tts_voice": None,
            "wake_word_entity": None,
            "wake_word_id": None,
            "prefer_local_intents": False,
        }
    )


async def setup_wyoming(hass: HomeAssistant, host: str, port: int) -> str:
    """Add HA's Wyoming integration for the server at ``host``:``port``; return its entry id."""
    before = {entry.entry_id for entry in hass.config_entries.async_entries("wyoming")}
    flow = await hass.config_entries.flow.async_init("wyoming", context={"source": "user"})
    await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_HOST: host, CONF_PORT: port}
    )
    await hass.async_block_till_done()
    (added,) = [e for e in hass.config_entries.async_entries("wyoming") if e.entry_id not in before]
    return added.entry_id


def wyoming_entity(hass: HomeAssistant, entry_id: str, domain: str) -> str:
    """Return the Wyoming entry's one entity of ``domain``."""
    registry = er.async_get(hass)
    (found,) = [
        e.entity_id
        for e in er.async_entries_for_config_entry(registry, entry_id)
        if e.domain == domain and (domain != "select" or e.unique_id.endswith("-pipeline"))
    ]
    return found


async def setup_ha_satellite(
    hass: HomeAssistant, satellite: RealTimeSatellite, pipeline: Pipeline
) -> str:
    """Connect HA's Wyoming satellite to ``satellite`` on ``pipeline``; return its entity id."""
    entry_id = await setup_wyoming(hass, satellite.host, satellite.port)
    select = wyoming_entity(hass, entry_id, "select")
    await hass.services.async_call(
        "select", "select_option", {"entity_id": select, "option": pipeline.name}, blocking=True
    )
    await asyncio.wait_for(satellite.connected.wait(), TIMEOUT)
    return wyoming_entity(hass, entry_id, "assist_satellite")


async def setup_ha_voice(hass: HomeAssistant, host: str, port: int) -> str:
    """Add HA's own Wyoming TTS for the Piper at ``host``:``port``; return its entity id."""
    return wyoming_entity(hass, await setup_wyoming(hass, host, port), "tts")


async def wait_until(done: Callable[[], bool], within: float = TIMEOUT) -> None:
    """Wait until ``done()`` says so, or fail."""
    for _ in range(int(within / POLL)):
        if done():
            return
        await asyncio.sleep(POLL)
    raise AssertionError(f"not done within {within} s")
