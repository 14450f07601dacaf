"""Helpers for satellite tests: the companion with a satellite, and Assist's pipeline for it.

The pipeline is the preferred one, so the satellite's *Assistant* select (``preferred``)
runs it: STT (whisper, or a scripted ASR server), our persona, our piper voice.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from homeassistant.components.assist_pipeline.pipeline import (
    KEY_ASSIST_PIPELINE,
    async_create_default_pipeline,
    async_update_pipeline,
)
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.core import HomeAssistant, State
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from tests.ha.entries import (
    VOICE,
    SetupCompanion,
    entity_id,
    persona,
    satellite,
    speech_to_text,
    wyoming_voice,
)
from tests.support.asr_server import ScriptedAsrServer
from tests.support.piper import PiperPeer
from tests.support.satellite_script import ScriptedSatellite

TIMEOUT = 30.0


@dataclass
class OnSatellite:
    """The companion with the scripted satellite: its entry, entity and peers."""

    entry: MockConfigEntry
    entity_id: str
    satellite: ScriptedSatellite
    asr: ScriptedAsrServer


async def setup_satellite_companion(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    piper: PiperPeer,
    stt: tuple[str, int, str],
    where: tuple[str, int],
    *,
    agent: ConfigSubentryData | None = None,
) -> tuple[MockConfigEntry, str]:
    """Set up a persona (``agent``; else the default one), a piper voice, an STT model and
    a satellite at ``where``.

    Their STT, agent and voice make the preferred pipeline. Return the entry and the
    satellite's entity id.
    """
    host, port, model = stt
    assert await async_setup_component(hass, "assist_pipeline", {})
    entry = await setup_companion(
        agent or persona(),
        wyoming_voice(piper.host, piper.port),
        speech_to_text(host, port, model, languages=["en"]),
        satellite(*where),
    )
    pipeline = await async_create_default_pipeline(
        hass,
        stt_engine_id=entity_id(hass, entry, "stt"),
        tts_engine_id=entity_id(hass, entry, "tts"),
        pipeline_name="Companion",
    )
    assert pipeline is not None
    await async_update_pipeline(
        hass,
        pipeline,
        conversation_engine=entity_id(hass, entry, "conversation"),
        conversation_language="en",
        prefer_local_intents=False,
        tts_voice=VOICE,
    )
    hass.data[KEY_ASSIST_PIPELINE].pipeline_store.async_set_preferred_item(pipeline.id)
    return entry, entity_id(hass, entry, "assist_satellite")


async def wait_state(
    hass: HomeAssistant, entity: str, state: str, within: float = TIMEOUT
) -> State:
    """Wait until ``entity`` is in ``state``; return that state."""
    async with asyncio.timeout(within):
        while True:
            current = hass.states.get(entity)
            if current is not None and current.state == state:
                return current
            await asyncio.sleep(0.02)
