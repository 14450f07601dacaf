"""What a satellite says, read as typed inputs; what it is told while a pipeline runs."""

from __future__ import annotations

import pytest
from wyoming.audio import AudioChunk
from wyoming.event import Event

from custom_components.companion_agent.engine.speech.info import (
    MAX_SATELLITE_TEXT,
    SatelliteInfo,
    SatelliteWakeWord,
    parse_satellite_info,
)
from custom_components.companion_agent.engine.speech.satellite import events as said
from custom_components.companion_agent.engine.speech.satellite.audio import PcmFormat
from custom_components.companion_agent.engine.speech.satellite.mirror import (
    mirror_pipeline_event,
    release_event,
)


def read(event: Event) -> object:
    """Return what a fresh connection reads in ``event``."""
    return said.SatelliteEvents().read(event)


def test_a_run_request_is_read_with_its_speaker_format() -> None:
    """``run-pipeline`` from speech to TTS, the wake word's name and ``snd_format`` kept."""
    event = Event(
        "run-pipeline",
        {
            "start_stage": "asr",
            "end_stage": "tts",
            "wake_word_name": "okay_nabu",
            "snd_format": {"rate": 16000, "width": 2, "channels": 1},
            "restart_on_end": False,
        },
    )
    assert read(event) == said.RunRequested(
        start="asr",
        end="tts",
        wake_word_name="okay_nabu",
        speaker_format=PcmFormat(rate=16000, width=2, channels=1),
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(
            {"start_stage": "tts", "end_stage": "tts"},
            "cannot run from 'tts' to 'tts'",
            id="no audio to run on",
        ),
        pytest.param(
            {"start_stage": "asr", "end_stage": "wake"}, "'wake' comes before 'asr'", id="backwards"
        ),
        pytest.param({"start_stage": "asr"}, "cannot run from 'asr' to None", id="no end"),
        pytest.param(
            {"start_stage": ["asr"], "end_stage": "tts"},
            "cannot run from ['asr'] to 'tts'",
            id="a stage that is no name",
        ),
    ],
)
def test_a_run_that_cannot_run_on_audio_is_ignored(data: dict[str, object], reason: str) -> None:
    """Only runs that start at the wake word or speech, and end after, are taken."""
    assert read(Event("run-pipeline", data)) == said.Ignored(type="run-pipeline", reason=reason)


def test_a_bad_speaker_format_leaves_the_audio_its_own() -> None:
    """A format nobody could play is dropped, the run is kept."""
    event = Event(
        "run-pipeline", {"start_stage": "wake", "end_stage": "tts", "snd_format": {"rate": 1}}
    )
    assert read(event) == said.RunRequested(start="wake", end="tts")


def test_microphone_audio_comes_out_at_16_khz_mono() -> None:
    """48 kHz stereo in, the STT's format out; bad chunks are ignored, not fatal."""
    events = said.SatelliteEvents()
    stereo = AudioChunk(rate=48000, width=2, channels=2, audio=bytes(48000 * 4)).event()
    audio = events.read(stereo)
    assert isinstance(audio, said.MicAudio)
    assert abs(len(audio.pcm) - 32000) <= 8
    unplayable = Event("audio-chunk", {"rate": 0, "width": 2, "channels": 1})
    assert events.read(unplayable) == said.Ignored(
        type="audio-chunk", reason="unplayable PCM: 0 Hz, 2 bytes, 1 ch"
    )
    odd = Event("audio-chunk", {"rate": 16000, "width": 2, "channels": 1}, payload=b"\0")
    assert events.read(odd) == said.Ignored(
        type="audio-chunk", reason="audio that is not whole frames"
    )


def test_the_other_events_are_read_or_ignored() -> None:
    """Stop, played, detection, ping, pong, info; unknown types are ignored."""
    assert read(Event("audio-stop")) == said.MicStopped()
    assert read(Event("played")) == said.Played()
    assert read(Event("detection", {"name": "hey_jarvis"})) == said.WakeDetected(name="hey_jarvis")
    assert read(Event("ping", {"text": "x"})) == said.PingAsked(text="x")
    assert read(Event("pong")) == said.PongHeard()
    assert read(Event("info", {"tts": []})) == said.Described(info=None)
    assert read(Event("x" * 500)) == said.Ignored(type="x" * 100, reason="not for us")


def test_a_satellites_info_is_read_tolerantly_and_cut() -> None:
    """Name, area and wake words; too long texts cut; malformed parts left out."""
    info = parse_satellite_info(
        {
            "satellite": {
                "name": "  Kitchen  ",
                "area": "A" * 500,
                "installed": True,
                "active_wake_words": ["okay_nabu", 3],
                "max_active_wake_words": 2,
                "has_vad": "yes",
            },
            "wake": [
                {"models": [{"name": "okay_nabu", "phrase": "okay nabu", "languages": ["en"]}]},
                {"models": [{"name": "gone", "installed": False}, {"phrase": "no name"}]},
                "not a program",
            ],
        }
    )
    assert info == SatelliteInfo(
        name="Kitchen",
        area="A" * MAX_SATELLITE_TEXT,
        wake_words=(SatelliteWakeWord(id="okay_nabu", phrase="okay nabu", languages=("en",)),),
        active_wake_words=("okay_nabu",),
        max_active_wake_words=2,
    )
    assert info.phrase("okay_nabu") == "okay nabu"
    assert info.phrase("other") == "other"
    assert parse_satellite_info({"satellite": {"name": "x", "installed": False}}) is None
    assert parse_satellite_info({"satellite": "no"}) is None


def test_pipeline_events_are_told_to_the_satellite() -> None:
    """The run's stages as the satellite's events; missing fields never raise."""
    assert mirror_pipeline_event("wake_word-start", {}) == Event("detect", {"names": None})
    assert mirror_pipeline_event("stt-start", {"metadata": {"language": "en"}}).data == {  # type: ignore[union-attr]
        "language": "en"
    }
    transcript = mirror_pipeline_event("stt-end", {"stt_output": {"text": "hello"}})
    assert transcript == Event("transcript", {"text": "hello"})
    assert mirror_pipeline_event("stt-end", {"stt_output": "garbage"}) == Event(
        "transcript", {"text": ""}
    )
    assert mirror_pipeline_event("error", {"code": "x", "message": "failed"}) == Event(
        "error", {"text": "failed", "code": "x"}
    )
    assert mirror_pipeline_event("intent-start", {}) is None
    assert mirror_pipeline_event("stt-vad-start", {"timestamp": "soon"}) == Event(
        "voice-started", {"timestamp": None}
    )


def test_a_held_satellite_is_let_go_with_its_transcript_or_silently() -> None:
    """Before the answer plays: the held transcript (or an empty one); after: run-satellite."""
    held = Event("transcript", {"text": "unlock the door"})
    assert release_event(held, answering=False) == held
    assert release_event(None, answering=False) == Event("transcript", {"text": ""})
    assert release_event(held, answering=True) == Event("run-satellite", {})
