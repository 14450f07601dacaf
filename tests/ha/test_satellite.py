"""The companion's satellite through a real HA, against a scripted satellite on a real socket.

The satellite is scripted (``tests/support/satellite_script.py``) so that each test says
exactly when it asks, speaks over the answer or goes away, and sees every event our entity
sends. Speech to text is the scripted ASR server (``fake_stt`` in the names: what is said
is not the subject here; the real whisper is in ``test_satellite_peer.py``); the voice is
the real Piper, the model the scripted server.
"""

from __future__ import annotations

import asyncio

import pytest
from homeassistant.components import tts
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import entity_registry as er
from syrupy.assertion import SnapshotAssertion

from custom_components.companion_agent.engine.speech.satellite import RunRequested
from custom_components.companion_agent.engine.speech.satellite.speaker import LEAD_SECONDS
from custom_components.companion_agent.voice.satellite import connection as satellite_connection
from custom_components.companion_agent.voice.satellite.run import SatelliteRun
from custom_components.companion_agent.voice.speaking import speaking_run
from tests.ha.common import assistant_text, entity_id, stored_turns
from tests.ha.common.satellites import (
    ANSWER,
    LONG_ANSWER,
    PIPER_RATE,
    SILENCE,
    OnSatellite,
    audio_chunks,
    traffic,
    wait_state,
)
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer


async def test_the_satellite_is_connected_and_asked_to_run(
    hass: HomeAssistant, on_satellite: OnSatellite
) -> None:
    """Describe, run-satellite and one ping at connect; its device holds the two selects."""
    assert on_satellite.satellite.received.types()[:3] == ["describe", "run-satellite", "ping"]
    entry = er.async_get(hass).async_get(on_satellite.entity_id)
    assert entry is not None
    assert entry.device_id is not None
    device = dr.async_get(hass).async_get(entry.device_id)
    assert device is not None
    assert device.name == "Kitchen satellite"
    selects = {
        e.unique_id.rsplit("-", 1)[1]: hass.states.get(e.entity_id)
        for e in er.async_entries_for_device(er.async_get(hass), entry.device_id)
        if e.domain == "select"
    }
    assert {key: state.state for key, state in selects.items() if state} == {
        "pipeline": "preferred",
        "vad_sensitivity": "default",
    }


async def test_a_run_streams_the_answer_as_pcm_at_real_time_fake_stt(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    llm_server: LLMServer,
    snapshot: SnapshotAssertion,
) -> None:
    """The satellite hears the answer: Piper's PCM, paced, no ffmpeg.

    It woke itself (its run is from ``asr``), so it streams until the reply is known not to
    ask; the answer has begun by then, so ``run-satellite``, not ``transcript``, lets it go.
    """
    satellite = on_satellite.satellite
    llm_server.script(Reply.text(ANSWER))
    sent_before = len(satellite.received.events)
    await satellite.ask(SILENCE)
    await wait_state(hass, on_satellite.entity_id, "responding")
    await satellite.wait_event("audio-stop")
    await wait_state(hass, on_satellite.entity_id, "idle")

    events = satellite.received.events[sent_before:]
    assert traffic(events) == snapshot
    times = [
        t
        for e, t in zip(events, satellite.received.times[sent_before:], strict=True)
        if e.type == "audio-chunk"
    ]
    seconds = len(satellite.received.audio()) / (PIPER_RATE * 2)
    assert seconds > 1.0
    assert times[-1] - times[0] >= seconds - LEAD_SECONDS - 0.2  # paced: never far ahead
    await on_satellite.entry.runtime_data.engine.flush()
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "complete"
    assert assistant_text(turn) == ANSWER


async def test_played_from_the_satellite_ends_playback_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """A satellite that says ``played`` is believed: idle then, not at the audio's end."""
    satellite = on_satellite.satellite
    satellite.says_played = True
    llm_server.script(Reply.text(ANSWER), Reply.text(ANSWER))
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-stop")
    await wait_state(hass, on_satellite.entity_id, "idle")  # first: learns it says played
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-stop", 2)
    stopped_at = asyncio.get_running_loop().time()
    await wait_state(hass, on_satellite.entity_id, "idle")
    # ``played`` came with audio-stop: idle at once, not ~LEAD_SECONDS + the margin later.
    assert asyncio.get_running_loop().time() - stopped_at < LEAD_SECONDS


async def test_the_speaker_format_the_satellite_names_is_made_in_process_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """``snd_format`` in ``run-pipeline``: Piper's 22.05 kHz is resampled to it here."""
    satellite = on_satellite.satellite
    llm_server.script(Reply.text(ANSWER))
    await satellite.ask(SILENCE, snd_format={"rate": 16000, "width": 2, "channels": 1})
    start = await satellite.wait_event("audio-start")
    await satellite.wait_event("audio-stop")
    assert (start.data["rate"], start.data["width"], start.data["channels"]) == (16000, 2, 1)
    chunks = [e for e in satellite.received.events if e.type == "audio-chunk"]
    assert {e.data["rate"] for e in chunks} == {16000}
    assert len(satellite.received.audio()) / (16000 * 2) > 1.0


async def test_a_new_run_over_the_answer_is_heard_and_the_old_one_cut_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """The race HA's own satellite loses: the run started over a running one gets its audio.

    The answer's turn and its pipeline still run (the model writes slowly) when the
    satellite asks again; the old run's end comes after the new run began. The new run's
    audio reaches speech to text, the old audio stops at once, the old turn keeps only
    the sentences that began in the seconds played, and the later request is answered.
    """
    satellite, asr = on_satellite.satellite, on_satellite.asr
    llm_server.script(Reply.text(LONG_ANSWER, chunk_size=10, delay=0.25), Reply.text(ANSWER))
    await satellite.ask(SILENCE)
    await audio_chunks(satellite, 1.5)
    barge_in = len(satellite.received.events)
    await satellite.ask(SILENCE * 2)
    await satellite.wait_event("audio-stop", 2)
    await wait_state(hass, on_satellite.entity_id, "idle")

    after = [e.type for e in satellite.received.events[barge_in:]]
    assert after.index("audio-stop") < after.index("transcribe")  # the old audio ended first
    # The satellite moved on by itself: the old run's stream is not ended under the new one.
    assert after.count("run-satellite") == 1
    assert after.index("transcribe") < after.index("run-satellite")
    stt_audio = [e for e in asr.events if e.type == "audio-chunk"]
    assert sum(len(e.payload or b"") for e in stt_audio) >= len(SILENCE) * 3  # both runs'
    assert asr.types.count("audio-stop") == 2
    await on_satellite.entry.runtime_data.engine.flush()
    first, second = sorted(stored_turns(hass), key=lambda turn: str(turn["time"]))
    assert first["outcome"] == "interrupted"
    kept = assistant_text(first)
    assert kept.endswith(".")  # whole sentences
    assert LONG_ANSWER.startswith(kept)
    assert 0 < len(kept) < len(LONG_ANSWER)
    assert second["outcome"] == "complete"
    assert assistant_text(second) == ANSWER


async def test_a_satellite_lost_mid_answer_is_reconnected_and_the_turn_failed_fake_stt(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    llm_server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The satellite goes away while the answer plays: the turn did not get through."""
    monkeypatch.setattr(satellite_connection, "RECONNECT_FIRST", 0.05)
    satellite = on_satellite.satellite
    llm_server.script(Reply.text(LONG_ANSWER, chunk_size=10, delay=0.25))
    await satellite.ask(SILENCE)
    await audio_chunks(satellite, 1.0)
    satellite.drop()
    await wait_state(hass, on_satellite.entity_id, "unavailable")
    await satellite.wait_connected(2)
    await wait_state(hass, on_satellite.entity_id, "idle")
    await on_satellite.entry.runtime_data.engine.flush()
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "failed"


async def test_the_companions_voice_marks_where_each_sentence_begins(
    hass: HomeAssistant, on_satellite: OnSatellite
) -> None:
    """A stream made in a satellite run's task (``speaking_run``) fills the run's marks."""
    run = SatelliteRun(
        RunRequested(start="asr", end="tts"),
        1,
        speak=lambda _run, _source: False,
        tell=lambda _event: None,
        may_ask_back=lambda _agent_id: False,
    )
    with speaking_run(run):
        stream = tts.async_create_stream(
            hass, entity_id(hass, on_satellite.entry, "tts"), options={"preferred_format": "wav"}
        )
        stream.async_set_message("It is sunny today. Take a hat with you.")
    marks = run.marks
    audio = b"".join([chunk async for chunk in stream.async_stream_result()])
    seconds = (len(audio) - 44) / (PIPER_RATE * 2)
    assert len(marks.starts) == 2
    assert marks.starts[0] == 0.0
    assert 0.5 < marks.starts[1] < seconds - 0.5


async def test_the_first_sentence_plays_before_has_stream_opens_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """The companion's voice hands the run its audio: no wait for HA's 60 characters.

    The model sends a short first sentence and a word, then holds. HA opens its TTS stream only
    past 60 characters of reply (or when the agent is done), so while the model holds, any
    audio the satellite gets came from the turn's own speech.
    """
    satellite = on_satellite.satellite
    rest = asyncio.Event()
    llm_server.script(
        Reply(
            chunks=(
                TextChunk("Sure."),
                TextChunk(" The"),  # the first sentence is over: the next one has begun
                TextChunk(" kitchen light is on now.", hold=rest),
            )
        )
    )
    sent_before = len(satellite.received.events)
    chunks_before = satellite.received.types().count("audio-chunk")
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-chunk", chunks_before + 1)  # while the model holds
    held = satellite.received.events[sent_before:]
    assert "synthesize" not in [e.type for e in held]  # HA's TTS stage has not begun
    rest.set()
    await satellite.wait_event("audio-stop")
    await wait_state(hass, on_satellite.entity_id, "idle")
    await on_satellite.entry.runtime_data.engine.flush()
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "complete"
    assert assistant_text(turn) == "Sure. The kitchen light is on now."
    answer = b"".join(
        e.payload or b"" for e in satellite.received.events[sent_before:] if e.type == "audio-chunk"
    )
    seconds = len(answer) / (PIPER_RATE * 2)
    assert 1.5 < seconds < 3.5  # both sentences played (about 2 s), each once (not 4)


async def test_with_the_model_down_the_satellite_speaks_the_apology_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """A turn with no answer of its own: the spoken apology still reaches the satellite."""
    satellite = on_satellite.satellite
    llm_server.script(*[Reply.error(500)] * 3)
    sent_before = len(satellite.received.events)
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-stop")
    await wait_state(hass, on_satellite.entity_id, "idle")
    answer = b"".join(
        e.payload or b"" for e in satellite.received.events[sent_before:] if e.type == "audio-chunk"
    )
    assert len(answer) / (PIPER_RATE * 2) > 1.5  # "Sorry, I can't reach my language model…"
