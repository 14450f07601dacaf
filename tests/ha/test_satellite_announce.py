"""Announcements, conversation starts and timers on the companion's satellite, through HA.

HA synthesises announcements with the satellite's pipeline and its TTS options (WAV, no
rate): the satellite gets Piper's PCM as it is made, with no ffmpeg. The pre-announcement
chime is Home Assistant's MP3, decoded by ffmpeg (imageio-ffmpeg's static one, which the
session puts on PATH); with no ffmpeg the message plays without it. The satellite is the
scripted one.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from homeassistant.components.assist_satellite import const as satellite_const
from homeassistant.components.assist_satellite.const import PREANNOUNCE_URL
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import intent
from homeassistant.helpers import issue_registry as ir
from syrupy.assertion import SnapshotAssertion

from custom_components.companion_agent.const import DOMAIN, ISSUE_COMPAT_CHIME
from tests.ha.common.satellites import ANSWER, PIPER_RATE, SILENCE, OnSatellite, traffic, wait_state
from tests.ha.common.speakers import start_chat
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.satellite_script import ScriptedSatellite

MESSAGE = "Dinner is ready."
QUESTION = "Shall I turn on the kitchen light?"


@pytest.fixture(autouse=True)
def media_urls(hass: HomeAssistant) -> None:
    """Give HA the URL announcements are resolved against."""
    hass.config.internal_url = "http://homeassistant.test:8123"


def seconds_sent(satellite: ScriptedSatellite, since: int) -> float:
    """Return the seconds of 22.05 kHz audio the satellite was sent after event ``since``."""
    chunks = satellite.received.events[since:]
    return sum(len(e.payload or b"") for e in chunks if e.type == "audio-chunk") / (PIPER_RATE * 2)


async def announce(hass: HomeAssistant, satellite_id: str, **data: object) -> float:
    """Call ``assist_satellite.announce``; return how long it took to return."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    await hass.services.async_call(
        "assist_satellite", "announce", {"entity_id": satellite_id, **data}, blocking=True
    )
    return loop.time() - began


async def test_an_announcement_plays_as_pcm_and_returns_once_played(
    hass: HomeAssistant, on_satellite: OnSatellite, snapshot: SnapshotAssertion
) -> None:
    """No chime asked: the message's PCM, paced; the call returns once it has played."""
    satellite = on_satellite.satellite
    since = len(satellite.received.events)
    took = await announce(hass, on_satellite.entity_id, message=MESSAGE, preannounce=False)

    assert traffic(satellite.received.events[since:]) == snapshot
    sent = seconds_sent(satellite, since)
    assert sent > 0.5
    assert took >= sent  # it waited for the audio to play out
    assert hass.states.get(on_satellite.entity_id).state == "idle"  # type: ignore[union-attr]


@pytest.mark.usefixtures("ffmpeg")  # the session's: imageio-ffmpeg's, first on PATH
async def test_the_chime_is_decoded_by_ffmpeg_and_played_first(
    hass: HomeAssistant, on_satellite: OnSatellite
) -> None:
    """HA's MP3 chime, through ffmpeg, in front of the message, in one audio stream."""
    satellite = on_satellite.satellite
    since = len(satellite.received.events)
    await announce(hass, on_satellite.entity_id, message=MESSAGE, preannounce=False)
    plain = seconds_sent(satellite, since)
    since = len(satellite.received.events)
    await announce(hass, on_satellite.entity_id, message=MESSAGE)
    with_chime = seconds_sent(satellite, since)

    assert [e.type for e in satellite.received.events[since:]].count("audio-start") == 1
    assert with_chime > plain + 0.3
    chunks = [e for e in satellite.received.events[since:] if e.type == "audio-chunk"]
    assert max(max(e.payload or b"\0") for e in chunks[:3]) > 0  # the chime is sound


async def test_without_ffmpeg_the_message_plays_without_its_chime(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No ffmpeg anywhere: a warning, and the message alone."""
    monkeypatch.setenv("PATH", str(tmp_path))
    satellite = on_satellite.satellite
    since = len(satellite.received.events)
    with caplog.at_level(logging.WARNING):
        await announce(hass, on_satellite.entity_id, message=MESSAGE)
    assert "without its chime" in caplog.text
    assert seconds_sent(satellite, since) > 0.5
    with pytest.raises(HomeAssistantError, match=r"needs ffmpeg|cannot run ffmpeg"):
        await announce(hass, on_satellite.entity_id, media_id=PREANNOUNCE_URL, preannounce=False)


@pytest.mark.usefixtures("ffmpeg")  # the session's: imageio-ffmpeg's, first on PATH
async def test_media_that_is_not_wav_is_decoded_by_ffmpeg(
    hass: HomeAssistant, on_satellite: OnSatellite
) -> None:
    """An MP3 to announce (HA's chime as the message): ffmpeg decodes it to PCM."""
    satellite = on_satellite.satellite
    since = len(satellite.received.events)
    await announce(hass, on_satellite.entity_id, media_id=PREANNOUNCE_URL, preannounce=False)
    assert seconds_sent(satellite, since) > 0.3


async def test_a_conversation_start_listens_at_once_on_a_streaming_satellite_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """A satellite streaming its microphone: the start plays, then a run hears the answer."""
    satellite = on_satellite.satellite
    llm_server.script(Reply.text(ANSWER))
    streaming = asyncio.create_task(satellite.stream_microphone())
    try:
        await hass.services.async_call(
            "assist_satellite",
            "start_conversation",
            {"entity_id": on_satellite.entity_id, "start_message": QUESTION, "preannounce": False},
            blocking=True,
        )
        await satellite.wait_event("transcript")
        await satellite.wait_event("audio-stop", 2)  # the start's audio, then the answer's
    finally:
        streaming.cancel()
    await wait_state(hass, on_satellite.entity_id, "idle")
    system = str(llm_server.requests[0]["messages"][0]["content"])  # type: ignore[index]
    assert QUESTION in system  # the model knows what it asked


async def test_a_conversation_start_on_a_wake_word_satellite_goes_on_at_its_wake_word_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """No microphone stream: the start plays; the next run continues that conversation."""
    satellite = on_satellite.satellite
    llm_server.script(Reply.text(ANSWER))
    await hass.services.async_call(
        "assist_satellite",
        "start_conversation",
        {"entity_id": on_satellite.entity_id, "start_message": QUESTION, "preannounce": False},
        blocking=True,
    )
    await asyncio.sleep(0.5)
    assert "transcribe" not in satellite.received.types()
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-stop", 2)
    messages = llm_server.requests[0]["messages"]
    assert isinstance(messages, list)
    assert QUESTION in str(messages[0]["content"])


async def test_timers_of_the_satellites_device_reach_the_satellite(
    hass: HomeAssistant, on_satellite: OnSatellite
) -> None:
    """Started and cancelled on its device: timer-started, then timer-cancelled."""
    satellite = on_satellite.satellite
    registered = er.async_get(hass).async_get(on_satellite.entity_id)
    assert registered is not None
    device_id = registered.device_id
    await intent.async_handle(
        hass, "test", intent.INTENT_START_TIMER, {"minutes": {"value": 5}}, device_id=device_id
    )
    started = await satellite.wait_event("timer-started")
    assert started.data["total_seconds"] == 300
    assert started.data["start_minutes"] == 5
    await intent.async_handle(
        hass,
        "test",
        intent.INTENT_CANCEL_TIMER,
        {"start_minutes": {"value": 5}},
        device_id=device_id,
    )
    cancelled = await satellite.wait_event("timer-cancelled")
    assert cancelled.data["id"] == started.data["id"]


async def test_the_companion_speaks_first_on_its_satellite_as_pcm(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """``start_chat``: the turn's TTS stream, asked as WAV, is read straight into PCM."""
    satellite = on_satellite.satellite
    llm_server.script(Reply.text("Good evening. Dinner is ready."))
    since = len(satellite.received.events)
    (chat,) = await start_chat(hass, targets=[on_satellite.entity_id], preannounce=False)
    assert chat["outcome"] == "complete"
    assert chat["text"] == "Good evening. Dinner is ready."
    start = next(e for e in satellite.received.events[since:] if e.type == "audio-start")
    assert start.data["rate"] == PIPER_RATE  # Piper's own rate: nothing converted it
    assert seconds_sent(satellite, since) > 1.0


@pytest.mark.usefixtures("ffmpeg")  # the session's: the chime could play, were it found
async def test_emulated_ha_with_its_chime_file_renamed_announces_without_it(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A newer HA whose chime file has another name: each message plays, without the
    chime and without an error; one warning and one issue say so."""
    satellite = on_satellite.satellite
    since = len(satellite.received.events)
    await announce(hass, on_satellite.entity_id, message=MESSAGE, preannounce=False)
    plain = seconds_sent(satellite, since)
    monkeypatch.setattr(satellite_const, "PREANNOUNCE_FILENAME", "preannounce_v2.mp3")

    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            since = len(satellite.received.events)
            await announce(hass, on_satellite.entity_id, message=MESSAGE)
            assert 0.5 < seconds_sent(satellite, since) < plain + 0.3

    assert ir.async_get(hass).async_get_issue(DOMAIN, ISSUE_COMPAT_CHIME) is not None
    assert "without its chime" not in caplog.text  # no decoding was tried
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.message.split(" is off")[0] for r in warnings] == [
        "Home Assistant's pre-announcement chime on the companion's satellite"
    ]
