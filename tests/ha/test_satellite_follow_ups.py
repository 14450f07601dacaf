"""Follow-ups on the companion's satellite: a reply that asks is answered without a wake word.

The satellite is the scripted one (``tests/support/satellite_script.py``): it asks for its
run from ``asr``, as wyoming-satellite does once it heard its own wake word, and then
streams its microphone, as wyoming-satellite does until it is told ``transcript`` or
``run-satellite``. What it is told, and in which order, is the subject; speech to text is
the scripted ASR server, the voice the real Piper, the model the scripted server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from custom_components.companion_agent.voice.satellite import runs as satellite_runs
from tests.ha.common import SetupCompanion, persona, write_profile
from tests.ha.common.satellites import (
    ANSWER,
    LONG_ANSWER,
    SILENCE,
    OnSatellite,
    audio_chunks,
    setup_satellite_companion,
    wait_state,
)
from tests.support.asr_server import TEXT, ScriptedAsrServer
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.satellite_script import ScriptedSatellite

QUESTION = "Shall I turn on the kitchen light?"
TOLD = ("transcribe", "transcript", "run-satellite", "synthesize", "audio-stop", "error")
QUIET = 1.5
"""How long nothing more happens once the last answer was heard: no run listens again."""


def told(satellite: ScriptedSatellite, since: int) -> list[str]:
    """Return what the satellite was told after event ``since``: the runs' milestones."""
    return [e.type for e in satellite.received.events[since:] if e.type in TOLD]


def assistant_messages(request: dict[str, object]) -> list[str]:
    """Return what the model wrote earlier, as a request sends it back."""
    messages = request["messages"]
    assert isinstance(messages, list)
    return [str(m["content"]) for m in messages if m["role"] == "assistant"]


@pytest.fixture
async def streaming(on_satellite: OnSatellite) -> AsyncIterator[ScriptedSatellite]:
    """Stream the scripted satellite's microphone for the whole test."""
    task = asyncio.create_task(on_satellite.satellite.stream_microphone())
    yield on_satellite.satellite
    task.cancel()


async def test_a_reply_that_asks_is_answered_without_the_wake_word_fake_stt(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    streaming: ScriptedSatellite,
    llm_server: LLMServer,
) -> None:
    """The question plays; once heard, a new run hears the answer in the same conversation.

    The satellite is never told ``transcript`` while the question is open (it would stop
    streaming); the answer's reply asks nothing, so the satellite is let go, and no run
    listens again.
    """
    satellite = streaming
    llm_server.script(Reply.text(QUESTION), Reply.text(ANSWER))
    since = len(satellite.received.events)
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-stop", 2)  # the question, then the answer's reply
    await wait_state(hass, on_satellite.entity_id, "idle")
    await asyncio.sleep(QUIET)

    assert told(satellite, since) == [
        *("transcribe", "synthesize", "audio-stop"),  # the question, held open
        *("transcribe", "run-satellite", "synthesize", "audio-stop"),  # the answer, let go
    ]
    assert len(llm_server.requests) == 2
    assert QUESTION in assistant_messages(llm_server.requests[1])  # the same conversation
    assert on_satellite.asr.types.count("audio-stop") == 2


async def test_a_barge_in_over_the_question_cancels_its_follow_up_fake_stt(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    streaming: ScriptedSatellite,
    llm_server: LLMServer,
) -> None:
    """The satellite woke again while the question played: that run is answered, no other."""
    satellite = streaming
    llm_server.script(Reply.text(f"{LONG_ANSWER} Shall I go on?"), Reply.text(ANSWER))
    since = len(satellite.received.events)
    await satellite.ask(SILENCE)
    await audio_chunks(satellite, 1.5)
    await satellite.ask(SILENCE)  # its wake word again, over the question
    await satellite.wait_event("audio-stop", 2)  # the question cut, then the answer
    await wait_state(hass, on_satellite.entity_id, "idle")
    await asyncio.sleep(QUIET)

    assert told(satellite, since).count("transcribe") == 2
    assert len(llm_server.requests) == 2


async def test_follow_ups_in_a_row_are_bounded_fake_stt(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    streaming: ScriptedSatellite,
    llm_server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Questions without end: after the bound (one here) the satellite is let go instead."""
    monkeypatch.setattr(satellite_runs, "MAX_FOLLOW_UPS", 1)
    satellite = streaming
    llm_server.script(Reply.text(QUESTION), Reply.text(QUESTION))
    since = len(satellite.received.events)
    await satellite.ask(SILENCE)
    await satellite.wait_event("run-satellite", 2)  # the connect's, then the bound's
    await wait_state(hass, on_satellite.entity_id, "idle")
    await asyncio.sleep(QUIET)

    assert told(satellite, since) == [
        *("transcribe", "synthesize", "audio-stop"),  # the question
        *("transcribe", "synthesize", "audio-stop"),  # its answer's reply, a question again
        "run-satellite",  # heard: the bound, so no run listens for it
    ]
    assert len(llm_server.requests) == 2


async def test_a_follow_up_that_hears_nothing_ends_the_chain_fake_stt(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    streaming: ScriptedSatellite,
    llm_server: LLMServer,
) -> None:
    """Speech to text finds nothing in the answer's run: it errs, the satellite is let go
    with an empty transcript (its "done" sound), and nothing listens again."""
    satellite, asr = streaming, on_satellite.asr
    llm_server.script(Reply.text(QUESTION))
    since = len(satellite.received.events)
    await satellite.ask(SILENCE)
    await satellite.wait_event("audio-stop")
    asr.behaviour = "error"
    await satellite.wait_event("error")
    await wait_state(hass, on_satellite.entity_id, "idle")
    await asyncio.sleep(QUIET)

    assert told(satellite, since) == [
        *("transcribe", "synthesize", "audio-stop"),
        *("transcribe", "error", "transcript"),
    ]
    transcript = next(e for e in reversed(satellite.received.events) if e.type == "transcript")
    assert transcript.data["text"] == ""
    assert len(llm_server.requests) == 1


async def test_with_follow_ups_off_the_transcript_goes_at_once_fake_stt(
    hass: HomeAssistant,
    *,
    setup_companion: SetupCompanion,
    piper: PiperPeer,
    scripted_asr: ScriptedAsrServer,
    scripted_satellite: ScriptedSatellite,
    llm_server: LLMServer,
) -> None:
    """A persona whose profile turns follow-ups off: the satellite is told what it heard as
    soon as the agent is known, before the answer, and a question is not listened for."""
    write_profile(hass, "quiet", "[output]\nfollow_ups = false\n")
    asr, satellite = scripted_asr, scripted_satellite
    _, entity = await setup_satellite_companion(
        hass,
        setup_companion,
        piper,
        (asr.host, asr.port, "tiny"),
        (satellite.host, satellite.port),
        agent=persona(profile="quiet", llm_apis=[llm.LLM_API_ASSIST]),
    )
    await wait_state(hass, entity, "idle")
    llm_server.script(Reply.text(QUESTION))
    streaming = asyncio.create_task(satellite.stream_microphone())
    try:
        since = len(satellite.received.events)
        await satellite.ask(SILENCE)
        await satellite.wait_event("audio-stop")
        await wait_state(hass, entity, "idle")
        await asyncio.sleep(QUIET)
    finally:
        streaming.cancel()

    assert told(satellite, since) == ["transcribe", "transcript", "synthesize", "audio-stop"]
    transcript = next(e for e in satellite.received.events if e.type == "transcript")
    assert transcript.data["text"] == TEXT


async def test_a_satellite_that_streams_all_the_time_is_followed_up_at_once_fake_stt(
    hass: HomeAssistant,
    on_satellite: OnSatellite,
    streaming: ScriptedSatellite,
    llm_server: LLMServer,
) -> None:
    """No wake word of its own: nothing to hold (it is told ``transcript`` at once); the
    conversation start listens, its question is answered on the stream, and no more."""
    satellite = streaming
    llm_server.script(Reply.text(QUESTION), Reply.text(ANSWER))
    await asyncio.sleep(0.2)  # its stream has begun
    since = len(satellite.received.events)
    await hass.services.async_call(
        "assist_satellite",
        "start_conversation",
        {"entity_id": on_satellite.entity_id, "start_message": "Hello.", "preannounce": False},
        blocking=True,
    )
    await satellite.wait_event("audio-stop", 3)  # the start, the question, the answer's reply
    await wait_state(hass, on_satellite.entity_id, "idle")
    await asyncio.sleep(QUIET)

    assert told(satellite, since) == [
        "audio-stop",  # the conversation start
        *("transcribe", "transcript", "synthesize", "audio-stop"),  # the question
        *("transcribe", "transcript", "synthesize", "audio-stop"),  # the answer's reply
    ]
    assert QUESTION in assistant_messages(llm_server.requests[1])


async def test_a_satellite_that_streams_on_speech_is_heard_from_stt_after_a_question_fake_stt(
    hass: HomeAssistant, on_satellite: OnSatellite, llm_server: LLMServer
) -> None:
    """Its voice activity detector starts its runs from ``wake`` (HA finds the wake word).
    After a question it has stopped streaming; the run it asks for next is heard from speech
    to text, with no wake word: here there is no wake word engine, so only that can answer."""
    satellite = on_satellite.satellite
    llm_server.script(Reply.text(f"{QUESTION} The kitchen or the hall?"), Reply.text(ANSWER))
    await satellite.ask(SILENCE, start_stage="wake")  # a run from its wake word: no engine
    await satellite.wait_event("error")
    streaming = asyncio.create_task(satellite.stream_microphone())
    await asyncio.sleep(0.2)
    await hass.services.async_call(
        "assist_satellite",
        "start_conversation",
        {"entity_id": on_satellite.entity_id, "start_message": "Hello.", "preannounce": False},
        blocking=True,
    )
    await satellite.wait_event("audio-start", 2)  # the question plays: it stops streaming
    streaming.cancel()
    await satellite.wait_event("audio-stop", 2)
    await wait_state(hass, on_satellite.entity_id, "idle")
    since = len(satellite.received.events)
    await satellite.ask(SILENCE, start_stage="wake")  # the person answers: it streams again
    await satellite.wait_event("audio-stop", 3)
    await wait_state(hass, on_satellite.entity_id, "idle")

    assert told(satellite, since) == ["transcribe", "transcript", "synthesize", "audio-stop"]
    assert len(llm_server.requests) == 2
    assert QUESTION in " ".join(assistant_messages(llm_server.requests[1]))
