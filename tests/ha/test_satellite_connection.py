"""The companion's satellite connection through a real HA, against a scripted satellite.

What a satellite sends that is no Wyoming, events we cannot use, audio without end, its
wake words, and pings: each ends the connection, is ignored or is bounded, never HA. The
satellite is scripted (``tests/support/satellite_script.py``) on a real socket; speech to
text is the scripted ASR server (``fake_stt``), the voice the real Piper.
"""

from __future__ import annotations

import asyncio

import pytest
from homeassistant.components.assist_satellite import AssistSatelliteConfiguration
from homeassistant.components.assist_satellite.const import DATA_COMPONENT as SATELLITES
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from wyoming.event import Event

from custom_components.companion_agent.voice.satellite import connection as satellite_connection
from custom_components.companion_agent.voice.satellite.run import MAX_LISTEN_SECONDS
from tests.ha.common.satellites import ANSWER, SILENCE, OnSatellite, wait_state
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(
            b'{"type": "audio-chunk", "payload_length": 999999999}\n', id="payload over its bound"
        ),
        pytest.param(b'{"type": "info", "data_length": 99999999}\n', id="data over its bound"),
        pytest.param(b"this is no wyoming\n", id="no json"),
        pytest.param(
            b'{"type": "run-pipeline"' + b" " * 70_000 + b"}\n", id="a line over its bound"
        ),
        pytest.param(b'["no", "type"]\n', id="json but no event"),
    ],
)
async def test_a_satellite_that_sends_no_wyoming_is_dropped_and_reconnected_fake_stt(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    llm_server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
    garbage: bytes,
) -> None:
    """What is no Wyoming event (or one over its bounds) ends the connection, not HA."""
    monkeypatch.setattr(satellite_connection, "RECONNECT_FIRST", 0.05)
    satellite = on_satellite.satellite
    await satellite.send_raw(garbage)
    await satellite.wait_connected(2)
    assert satellite.connections == 2  # dropped, then connected again

    llm_server.script(Reply.text(ANSWER))
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-stop")
    (told,) = [e for e in satellite.received.events if e.type == "synthesize"]
    assert told.data["text"] == ANSWER  # the new connection answers


async def test_bad_events_are_ignored_and_the_satellite_still_works_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """Events we cannot use change nothing; a flood of runs leaves one, which answers."""
    satellite = on_satellite.satellite
    await satellite.send(
        Event("run-pipeline", {"start_stage": "tts", "end_stage": "tts"}),
        Event("run-pipeline", {"start_stage": "asr", "end_stage": "wake"}),
        Event("run-pipeline", {"start_stage": 7}),
        Event("audio-chunk", {"rate": 0, "width": 2, "channels": 1}, payload=b"\0\0"),
        Event("audio-chunk", {"rate": 16000, "width": 2, "channels": 1}, payload=b"\0"),
        Event("audio-chunk", {"rate": "fast"}, payload=b"\0\0"),
        Event("info", {"satellite": "not an object"}),
        Event("played", {}),
        Event("no-such-event", {"x": 1}),
    )
    for _ in range(30):
        await satellite.send(Event("run-pipeline", {"start_stage": "asr", "end_stage": "tts"}))
    llm_server.script(Reply.text(ANSWER))
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-stop")
    await wait_state(hass, on_satellite.entity_id, "idle")
    assert satellite.connections == 1


async def test_endless_audio_is_cut_at_the_runs_bound_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """A satellite that never stops streaming: speech to text gets at most its bound."""
    satellite, asr = on_satellite.satellite, on_satellite.asr
    llm_server.script(Reply.text(ANSWER))
    await satellite.send(Event("run-pipeline", {"start_stage": "asr", "end_stage": "tts"}))
    chunk = Event("audio-chunk", {"rate": 16000, "width": 2, "channels": 1}, payload=bytes(32000))
    for _ in range(45):  # 45 s of audio, with no audio-stop
        await satellite.send(chunk)
    await satellite.wait_event("synthesize")  # speech to text ended: the reply is spoken
    heard = sum(len(e.payload or b"") for e in asr.events if e.type == "audio-chunk")
    assert heard <= (MAX_LISTEN_SECONDS + 1) * 32000


async def test_the_wake_words_are_the_satellites_own(
    hass: HomeAssistant, on_satellite: OnSatellite
) -> None:
    """What the satellite reports is shown; asking for others is refused, not pretended."""
    entity = hass.data[SATELLITES].get_entity(on_satellite.entity_id)
    assert entity is not None
    configuration = entity.async_get_configuration()
    assert configuration == AssistSatelliteConfiguration([], [], 1)  # 1.0.0 reports none
    await entity.async_set_configuration(configuration)  # the same: nothing to do
    with pytest.raises(HomeAssistantError):
        await entity.async_set_configuration(AssistSatelliteConfiguration([], ["hey_jarvis"], 1))


async def test_only_a_satellite_that_answers_pings_is_pinged_and_dropped_when_silent(
    hass: HomeAssistant, on_satellite: OnSatellite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Silent after one unanswered ping: left alone. Answering, then silent: reconnected."""
    monkeypatch.setattr(satellite_connection, "PING_INTERVAL", 0.05)
    monkeypatch.setattr(satellite_connection, "PING_TIMEOUT", 0.3)
    monkeypatch.setattr(satellite_connection, "RECONNECT_FIRST", 0.05)
    satellite = on_satellite.satellite
    await asyncio.sleep(0.5)  # too early for the patched interval: the first connection's
    assert satellite.received.types().count("ping") == 1  # ping at connect, never answered
    satellite.answers_ping = True
    satellite.drop()
    await satellite.wait_connected(2)
    await satellite.wait_event("ping", 4)  # answered: pinged again and again
    satellite.answers_ping = False  # and now silent: taken as gone
    await satellite.wait_connected(3)
    assert satellite.connections >= 3
