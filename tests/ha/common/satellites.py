"""Satellites on an Assist pipeline, for tests: the companion's own, and HA's Wyoming one.

``setup_satellite_companion`` sets up the companion with its satellite and makes the
preferred pipeline of its parts, so the satellite's *Assistant* select (``preferred``) runs
it: STT (whisper, or a scripted ASR server), our persona, our piper voice.
``setup_ha_satellite`` adds HA's Wyoming integration for a ``RealTimeSatellite``, points its
*Assistant* select at a pipeline and waits until HA is connected; ``setup_ha_voice`` adds
HA's own Wyoming TTS on a Piper. ``traffic`` and ``audio_chunks`` read what the companion's
satellite was sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from homeassistant.components.assist_pipeline.pipeline import (
    KEY_ASSIST_PIPELINE,
    Pipeline,
    async_create_default_pipeline,
    async_update_pipeline,
)
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant, State
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry
from wyoming.event import Event

from tests.ha.common import (
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
from tests.support.realtime_satellite import RealTimeSatellite
from tests.support.satellite_script import ScriptedSatellite

STATE_TIMEOUT = 30.0
CONNECT_TIMEOUT = 20.0
POLL = 0.02
SILENCE = bytes(16000)  # half a second at 16 kHz
ANSWER = "The kitchen light is on now."
LONG_ANSWER = (
    "The weather stays fine all week. "
    "On Monday it will be sunny and warm in the whole valley. "
    "On Tuesday a light breeze comes up in the afternoon. "
    "On Wednesday the clouds return, but it stays dry."
)
PIPER_RATE = 22050


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
    hass: HomeAssistant, entity: str, state: str, within: float = STATE_TIMEOUT
) -> State:
    """Wait until ``entity`` is in ``state``; return that state."""
    async with asyncio.timeout(within):
        while True:
            current = hass.states.get(entity)
            if current is not None and current.state == state:
                return current
            await asyncio.sleep(POLL)


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
    await asyncio.wait_for(satellite.connected.wait(), CONNECT_TIMEOUT)
    return wyoming_entity(hass, entry_id, "assist_satellite")


async def setup_ha_voice(hass: HomeAssistant, host: str, port: int) -> str:
    """Add HA's own Wyoming TTS for the Piper at ``host``:``port``; return its entity id."""
    return wyoming_entity(hass, await setup_wyoming(hass, host, port), "tts")


async def wait_until(done: Callable[[], bool], within: float = CONNECT_TIMEOUT) -> None:
    """Wait until ``done()`` says so, or fail."""
    for _ in range(int(within / POLL)):
        if done():
            return
        await asyncio.sleep(POLL)
    raise AssertionError(f"not done within {within} s")


def traffic(events: list[Event]) -> list[dict[str, object]]:
    """Return the events in a snapshot's form: each run of audio chunks as one line."""
    out: list[dict[str, object]] = []
    for event in events:
        if event.type == "audio-chunk":
            if out and out[-1]["type"] == "audio-chunk…":
                continue
            out.append(
                {
                    "type": "audio-chunk…",
                    "data": {k: event.data[k] for k in ("rate", "width", "channels")},
                }
            )
        else:
            out.append(
                {
                    "type": event.type,
                    "data": {k: v for k, v in event.data.items() if k != "timestamp"},
                }
            )
    return out


async def audio_chunks(satellite: ScriptedSatellite, seconds: float) -> None:
    """Wait until the satellite has been sent ``seconds`` of answer audio."""
    await satellite.wait_event("audio-chunk", max(1, round(seconds / 0.05)))
