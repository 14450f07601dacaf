"""A turn's first sentence begun on a guess, against the real wyoming-piper (through the
recording proxy): the voice starts before the sentence is decided, and a wrong guess is
never heard.
"""

import asyncio

import pytest

from custom_components.companion_agent.engine.speech import AudioChunk, TurnSpeech, WyomingTTS
from tests.support.piper import PiperPeer
from tests.support.speech_feed import Feed
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 10.0


def tts(proxy: WyomingProxy, piper: PiperPeer) -> WyomingTTS:
    """Return a client speaking piper's voice through the proxy."""
    return WyomingTTS(proxy.host, proxy.port, voice=piper.voice)


async def nothing_within(audio: asyncio.Task[AudioChunk | None], seconds: float) -> None:
    """Assert the stream hands on no chunk for ``seconds``."""
    done, _ = await asyncio.wait((audio,), timeout=seconds)
    assert not done, "audio was handed on before the first sentence was decided"


async def test_a_right_guess_is_spoken_once_and_heard_only_once_decided(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    feed = Feed()
    speech, client = TurnSpeech("t1", feed.read), tts(proxy, piper)
    feed.guess("Good morning.")
    audio = speech.audio(piper.voice, client.synthesize)
    first = asyncio.create_task(anext(audio, None))
    await asyncio.wait_for(proxy.wait_finished(1), TIMEOUT)  # all its audio made, and held
    await nothing_within(first, 0.3)

    feed.add("Good  morning.")  # the same speech, spaced otherwise
    feed.add("Tea is ready.")
    feed.end()
    chunks = [await first, *[chunk async for chunk in audio]]

    assert proxy.texts == ["Good morning.", "Tea is ready."]  # each once
    assert b"".join(c.audio for c in chunks if c) == b"".join(proxy.audio)
    assert [n for n, _ in speech.timeline.starts] == [0, 1]
    assert speech.texts == ["Good  morning.", "Tea is ready."]  # what the turn said
    await proxy.wait_idle()


async def test_a_wrong_guess_is_never_heard_and_the_real_sentence_is_spoken(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    """``light.`` was no end: the text went on to ``light.kitchen``."""
    feed = Feed()
    speech, client = TurnSpeech("t1", feed.read), tts(proxy, piper)
    feed.guess("I turned on light.")
    assert speech.start(piper.voice, client.synthesize)  # ahead, as our satellite starts it
    await asyncio.wait_for(proxy.wait_finished(1), TIMEOUT)
    guessed = len(proxy.audio)

    feed.add("I turned on light.kitchen now.")
    feed.end()
    chunks = [chunk async for chunk in speech.audio(piper.voice, client.synthesize)]

    assert proxy.texts == ["I turned on light.", "I turned on light.kitchen now."]
    assert b"".join(c.audio for c in chunks) == b"".join(proxy.audio[guessed:])
    assert {c.sentence for c in chunks} == {0}
    assert [n for n, _ in speech.timeline.starts] == [0]
    await proxy.wait_idle()


async def test_a_newer_guess_drops_the_older_one_unheard(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    """The text went on past the first guess without ending: the newest guess speaks."""
    feed = Feed()
    speech, client = TurnSpeech("t1", feed.read), tts(proxy, piper)
    feed.guess("It is half past.")
    audio = speech.audio(piper.voice, client.synthesize)
    first = asyncio.create_task(anext(audio, None))
    await asyncio.wait_for(proxy.wait_finished(1), TIMEOUT)
    guessed = len(proxy.audio)
    feed.guess("It is half past.five now.")
    await asyncio.wait_for(proxy.wait_finished(2), TIMEOUT)
    await nothing_within(first, 0.2)

    feed.add("It is half past.five now.")
    feed.end()
    chunks = [await first, *[chunk async for chunk in audio]]

    assert proxy.texts == ["It is half past.", "It is half past.five now."]  # no third
    assert b"".join(c.audio for c in chunks if c) == b"".join(proxy.audio[guessed:])
    await proxy.wait_idle()


async def test_a_turn_stopped_on_a_guess_says_nothing(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    feed = Feed()
    speech, client = TurnSpeech("t1", feed.read), tts(proxy, piper)
    feed.guess("Good morning.")
    assert speech.start(piper.voice, client.synthesize)
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)

    speech.stop()
    chunks = [chunk async for chunk in speech.audio(piper.voice, client.synthesize)]

    assert chunks == []
    assert speech.texts == []
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)


@pytest.mark.parametrize("wrong", [3, 4])
async def test_after_three_wrong_guesses_the_turn_is_spoken_without_guessing(
    proxy: WyomingProxy, piper: PiperPeer, wrong: int
) -> None:
    feed = Feed()
    speech, client = TurnSpeech("t1", feed.read), tts(proxy, piper)
    audio = speech.audio(piper.voice, client.synthesize)
    first = asyncio.create_task(anext(audio, None))
    for n, word in enumerate(("one", "two", "three", "four")[:wrong]):
        feed.guess(f"Step {word}.")
        if n < 3:
            await asyncio.wait_for(proxy.wait_asked(n + 1), TIMEOUT)
    await asyncio.sleep(0.2)
    assert len(proxy.texts) == 3  # the fourth guess is not spoken

    feed.add("Step one two three four five.")
    feed.end()
    chunks = [await first, *[chunk async for chunk in audio]]

    assert len(proxy.texts) == 4  # three guesses, then the sentence itself
    assert proxy.texts[-1] == "Step one two three four five."
    assert all(c is not None and c.sentence == 0 for c in chunks)
    await proxy.wait_idle()
