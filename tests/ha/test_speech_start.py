"""A turn's speech through a real HA: an Assist pipeline, our agent, our voice, real Piper.

Each test runs a text pipeline (intent → tts) as HA's websocket API runs one, with our
agent streaming from the scripted model server (held back on cue) and our TTS entity
speaking through a recording proxy in front of the real wyoming-piper. Order is proved by
a journal the proxy and the entity's stream share, never by the clock. A text run has no
satellite: the voice is found in Assist's table of running pipelines (the guarded
fallback of ``voice/speaking.py:running_voice``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from homeassistant.components.assist_pipeline.pipeline import (  # requirements_test.txt
    PipelineEventType,
)
from homeassistant.components.tts.entity import TTSAudioRequest
from homeassistant.core import HomeAssistant

from custom_components.companion_agent.engine.speech import TurnSpeech
from tests.ha.common.audio import FIRST, SECOND, THIRD, pcm
from tests.ha.common.pipelines import STREAM_OPENED, Voice, start_text_run
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 10.0


async def test_the_first_sentence_goes_to_piper_before_ha_opens_the_stream(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(
        Reply.held(
            f"{FIRST} The kettle", SECOND.removeprefix("The kettle"), f" {THIRD}", until=released
        )
    )
    flight = start_text_run(hass, voice.pipeline, "Morning?", timeout=TIMEOUT)

    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)  # while the model holds back
    assert proxy.texts == [FIRST]
    assert STREAM_OPENED not in voice.journal
    released.set()
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert voice.journal == [
        f"piper asked: {FIRST}",
        STREAM_OPENED,
        f"piper asked: {SECOND}",
        f"piper asked: {THIRD}",
    ]
    assert proxy.texts == [FIRST, SECOND, THIRD]  # the first sentence once, not twice
    assert pcm(parts) == b"".join(proxy.audio)  # exactly what piper made, in order
    assert voice.entry.runtime_data.engine.speech.running_ahead == 0
    await proxy.wait_idle()


async def test_the_head_start_sounds_as_the_usual_path(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    reply = f"{FIRST} {SECOND} {THIRD}"
    llm_server.script(Reply.text(reply, chunk_size=9))
    flight = start_text_run(hass, voice.pipeline, "Morning?", timeout=TIMEOUT)
    ahead = [part async for part in flight.audio()]
    await flight.done()
    ahead_texts, proxy.texts[:] = list(proxy.texts), []

    response = await voice.tts.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={}, message_gen=_pieces(reply))
    )
    usual = [part async for part in response.data_gen]

    assert ahead_texts == proxy.texts == [FIRST, SECOND, THIRD]
    assert ahead[0] == usual[0]  # the same WAV header: rate, width, channels
    # Piper's voices vary a little from one synthesis to the next: the length, not the bytes.
    assert abs(len(pcm(ahead)) - len(pcm(usual))) < len(pcm(usual)) // 10


async def test_a_text_that_is_no_turns_is_spoken_as_itself(
    hass: HomeAssistant, proxy: WyomingProxy, voice: Voice
) -> None:
    speech = voice.entry.runtime_data.engine.speech
    speech.follow(TurnSpeech("trace-other", _other_words))
    assert voice.tts.async_speak_ahead("trace-other", {})
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)
    await proxy.wait_idle()  # its synthesis is done: its connection closed
    ahead_audio = b"".join(proxy.audio)

    response = await voice.tts.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={}, message_gen=_pieces(f"{FIRST} {THIRD}"))
    )
    parts = [part async for part in response.data_gen]

    assert proxy.texts == ["Something else entirely.", FIRST, THIRD]
    assert pcm(parts) == b"".join(proxy.audio).removeprefix(ahead_audio)
    assert speech.running_ahead == 1  # still waiting for its own stream, until it is forgotten
    speech.close()
    assert speech.running_ahead == 0


async def _other_words() -> AsyncGenerator[str]:
    """Yield another turn's one sentence."""
    yield "Something else entirely."


async def test_a_cancelled_turn_stops_its_audio_at_once(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(Reply.held(f"{FIRST} {SECOND} {THIRD} And", " scones too.", until=released))
    proxy.fault(SECOND, "stall")  # piper "works" on the second sentence until cut off
    flight = start_text_run(hass, voice.pipeline, "Morning?", timeout=TIMEOUT)
    audio = flight.audio()
    header = await anext(audio)
    first = await anext(audio)  # the head start's audio, while the model holds back
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)
    while len(first) < len(b"".join(proxy.audio)):  # until the first sentence has come out
        first += await asyncio.wait_for(anext(audio), TIMEOUT)

    (turn,) = voice.turns
    turn.cancel("the person spoke")
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)  # the sockets are closed at once
    rest = [part async for part in audio]  # and the WAV stream ends
    await flight.done()

    assert len(header) == 44
    assert proxy.texts == [FIRST]  # the stalled second is not counted; the third never asked
    assert pcm([header, first, *rest]) == b"".join(proxy.audio)  # the first sentence, whole
    assert voice.entry.runtime_data.engine.speech.running_ahead == 0
    released.set()


async def _pieces(text: str, size: int = 9) -> AsyncGenerator[str]:
    """Yield ``text`` in pieces, as a model's stream would."""
    for start in range(0, len(text), size):
        yield text[start : start + size]


async def test_first_audio_leaves_our_voice_while_the_model_holds_back_the_rest(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    opening = f"{FIRST} {SECOND} Biscuits"  # over HA's 60 characters
    llm_server.script(Reply.held(opening, THIRD.removeprefix("Biscuits"), until=released))
    flight = start_text_run(hass, voice.pipeline, "Morning?", timeout=TIMEOUT)
    audio = flight.audio()

    header = await asyncio.wait_for(anext(audio), TIMEOUT)
    first = await asyncio.wait_for(anext(audio), TIMEOUT)

    assert len(header) == 44
    assert first
    assert not released.is_set()
    assert flight.task is not None
    assert not flight.task.done()  # the agent still waits for the model
    assert THIRD not in proxy.texts
    released.set()
    rest = [part async for part in audio]
    await flight.done()
    assert proxy.texts == [FIRST, SECOND, THIRD]
    assert pcm([header, first, *rest]) == b"".join(proxy.audio)


async def test_a_turn_cancelled_before_ha_speaks_drops_its_head_start_and_says_nothing(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(Reply.held(f"{FIRST} The", " kettle.", until=released))
    proxy.fault(FIRST, "stall")  # the head start is still at piper when the turn is cut
    flight = start_text_run(hass, voice.pipeline, "Morning?", timeout=TIMEOUT)
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)

    (turn,) = voice.turns
    turn.cancel("the person spoke")
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)  # the head start's socket is closed
    await flight.done()

    assert voice.entry.runtime_data.engine.speech.running_ahead == 0
    assert STREAM_OPENED not in voice.journal
    assert PipelineEventType.TTS_START not in [e.type for e in flight.events]
    released.set()


async def test_the_voice_cuts_the_first_clause_as_the_turn_does(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    released = asyncio.Event()
    llm_server.script(Reply.held("Good morning, my", f" friend. {SECOND}", until=released))
    flight = start_text_run(hass, voice.pipeline, "Morning?", timeout=TIMEOUT)
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)  # the clause, ahead of HA
    released.set()
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert proxy.texts == ["Good morning,", "my friend.", SECOND]  # the clause once
    assert pcm(parts) == b"".join(proxy.audio)


async def test_piper_begins_the_first_sentence_before_the_next_token_decides_it(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    """The model holds back the token after ``Good morning.``: the voice began on it."""
    released = asyncio.Event()
    llm_server.script(Reply.held(FIRST, f" {SECOND} {THIRD}", until=released))
    flight = start_text_run(hass, voice.pipeline, "Morning?", timeout=TIMEOUT)
    await asyncio.wait_for(proxy.wait_finished(1), TIMEOUT)  # made while the model holds back
    assert proxy.texts == [FIRST]
    released.set()
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert proxy.texts == [FIRST, SECOND, THIRD]  # the guess was right: spoken once
    assert pcm(parts) == b"".join(proxy.audio)


async def test_a_first_sentence_guessed_wrong_is_never_heard(
    hass: HomeAssistant, llm_server: LLMServer, proxy: WyomingProxy, voice: Voice
) -> None:
    """``light.`` was no end (``light.kitchen``): what Piper made of it is dropped."""
    released = asyncio.Event()
    llm_server.script(Reply.held("I checked light.", f"kitchen now. {SECOND}", until=released))
    flight = start_text_run(hass, voice.pipeline, "Lights?", timeout=TIMEOUT)
    await asyncio.wait_for(proxy.wait_finished(1), TIMEOUT)
    guessed = len(proxy.audio)
    released.set()
    parts = [part async for part in flight.audio()]
    await flight.done()

    assert proxy.texts[0] == "I checked light."
    assert proxy.texts[1:] == ["I checked light.kitchen now.", SECOND]
    assert pcm(parts) == b"".join(proxy.audio[guessed:])
