"""A turn's speech against the real wyoming-piper (through the fault-injecting proxy).

The turn's sentences come from ``Feed`` (``tests/support/speech_feed.py``), which follows
the rules of ``Turn.guessed_speech()``.
"""

import asyncio
import socket

import pytest

from custom_components.companion_agent.engine.errors import SpeechConnectionError
from custom_components.companion_agent.engine.speech import (
    AudioChunk,
    AudioTimeline,
    SpeechTurns,
    TurnSpeech,
    WyomingTTS,
)
from tests.support.piper import PiperPeer
from tests.support.speech_feed import Feed
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 10.0
VOICE = "joe"


def tts(proxy: WyomingProxy, piper: PiperPeer) -> WyomingTTS:
    """Return a client speaking piper's voice through the proxy."""
    return WyomingTTS(proxy.host, proxy.port, voice=piper.voice)


def started(proxy: WyomingProxy, piper: PiperPeer, voice: str) -> tuple[TurnSpeech, WyomingTTS]:
    """Return a turn of two sentences (all taken) started ahead in ``voice``, and its client."""
    feed = Feed("Good morning.", "Tea is ready.")
    feed.end()
    speech = TurnSpeech("t1", feed.read)
    client = tts(proxy, piper)
    assert speech.start(voice, client.synthesize)
    return speech, client


def chunk(sentence: int, seconds: float) -> AudioChunk:
    """Return ``seconds`` of 16 kHz 16-bit mono audio of ``sentence``."""
    return AudioChunk(
        sentence=sentence, rate=16000, width=2, channels=1, audio=bytes(int(seconds * 32000))
    )


async def test_audio_started_ahead_plays_what_piper_made_then_the_rest(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    feed = Feed("Good morning.")
    speech = TurnSpeech("t1", feed.read)
    client = tts(proxy, piper)
    assert speech.start(VOICE, client.synthesize)
    assert not speech.start(VOICE, client.synthesize)  # once
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)  # before anyone listens

    audio = speech.audio(VOICE, client.synthesize)
    feed.add("Tea is ready.")
    feed.end()
    chunks = [chunk async for chunk in audio]

    assert proxy.texts == ["Good morning.", "Tea is ready."]  # each once
    assert b"".join(c.audio for c in chunks) == b"".join(proxy.audio)
    assert [n for n, _ in speech.timeline.starts] == [0, 1]
    assert speech.timeline.seconds == pytest.approx(sum(len(c.audio) for c in chunks) / 44100)
    await proxy.wait_idle()


async def test_a_second_stream_of_the_turn_gets_nothing_and_piper_speaks_it_once(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    """The host plays the turn itself; HA's stream, which asks after it, stays silent."""
    speech, client = started(proxy, piper, VOICE)
    played = speech.audio(VOICE, client.synthesize)
    first = await anext(played)
    second = [chunk async for chunk in speech.audio(VOICE, client.synthesize)]
    rest = [chunk async for chunk in played]

    assert second == []
    assert proxy.texts == ["Good morning.", "Tea is ready."]  # each once
    assert b"".join(c.audio for c in (first, *rest)) == b"".join(proxy.audio)
    assert [n for n, _ in speech.timeline.starts] == [0, 1]  # the timeline is the first's
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)


async def test_a_stream_in_another_voice_speaks_the_turn_again_from_the_start(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    speech, client = started(proxy, piper, "another voice")
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)

    chunks = [chunk async for chunk in speech.audio(VOICE, client.synthesize)]

    assert proxy.texts[-2:] == ["Good morning.", "Tea is ready."]
    assert [n for n, _ in speech.timeline.starts] == [0, 1]
    assert speech.voice == VOICE
    assert chunks
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)  # the dropped synthesis closed too


async def test_stopping_ends_the_stream_at_once_and_closes_the_socket(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    proxy.fault("The second one.", "stall")
    feed = Feed("The first one.", "The second one.")
    speech = TurnSpeech("t1", feed.read)
    client = tts(proxy, piper)
    speech.start(VOICE, client.synthesize)
    played: list[bytes] = []
    more = asyncio.Event()

    async def listen() -> None:
        async for chunk in speech.audio(VOICE, client.synthesize):  # as HA's cache: eagerly
            played.append(chunk.audio)
            more.set()

    listener = asyncio.create_task(listen())
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)  # the second is at piper
    while len(b"".join(played)) < len(b"".join(proxy.audio)):  # the first one plays out
        more.clear()
        await asyncio.wait_for(more.wait(), TIMEOUT)
    speech.stop()
    await asyncio.wait_for(listener, TIMEOUT)
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)

    assert proxy.texts == ["The first one."]
    assert b"".join(played) == b"".join(proxy.audio)
    assert not speech.start(VOICE, client.synthesize)  # a stopped turn speaks no more


async def test_audio_made_ahead_waits_within_its_bound(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    feed = Feed("One.", "Two.", "Three.")
    feed.end()
    speech = TurnSpeech("t1", feed.read, limit=1)  # one chunk fills it
    client = tts(proxy, piper)
    speech.start(VOICE, client.synthesize)
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)
    await asyncio.sleep(0.5)  # nobody listens: the synthesis waits, the rest is not asked
    assert proxy.texts == ["One."]

    chunks = [chunk async for chunk in speech.audio(VOICE, client.synthesize)]

    assert proxy.texts == ["One.", "Two.", "Three."]
    assert b"".join(c.audio for c in chunks) == b"".join(proxy.audio)


async def test_a_failed_synthesis_ahead_raises_in_the_stream(socket_enabled: None) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    feed = Feed("Hello.")
    feed.end()
    speech = TurnSpeech("t1", feed.read)
    client = WyomingTTS("127.0.0.1", port, voice=VOICE)
    assert speech.start(VOICE, client.synthesize)

    with pytest.raises(SpeechConnectionError):
        async for _chunk in speech.audio(VOICE, client.synthesize):
            pass


async def test_without_a_start_the_stream_speaks_as_usual(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    feed = Feed("Hello there.", "Bye.")
    feed.end()
    speech = TurnSpeech("t1", feed.read)
    client = tts(proxy, piper)
    chunks = [chunk.audio async for chunk in speech.audio(VOICE, client.synthesize)]
    assert proxy.texts == ["Hello there.", "Bye."]
    assert b"".join(chunks) == b"".join(proxy.audio)


def test_the_timeline_plays_each_chunk_when_handed_on_or_when_the_audio_before_ends() -> None:
    timeline = AudioTimeline()
    timeline.handed(chunk(0, 1.0), at=100.0)
    timeline.handed(chunk(0, 1.0), at=100.1)  # made faster than it plays: queued
    timeline.handed(chunk(1, 0.5), at=100.2)  # begins when sentence 0 ends, at 102
    timeline.handed(chunk(2, 1.0), at=105.0)  # made after a gap: begins when handed on

    assert timeline.starts == [(0, 100.0), (1, 102.0), (2, 105.0)]
    assert timeline.seconds == pytest.approx(3.5)
    assert timeline.ends_at == pytest.approx(106.0)
    assert [timeline.heard(at) for at in (99.9, 100.0, 101.9, 102.0, 104.9, 105.0)] == [
        0,
        1,
        1,
        2,
        2,
        3,
    ]
    assert not timeline.played_out(105.4, margin=0.5)
    assert timeline.played_out(105.5, margin=0.5)
    timeline.reset()
    assert (timeline.starts, timeline.seconds, timeline.ends_at) == ([], 0.0, None)


def test_a_sentence_without_audio_counts_as_passed_once_a_later_one_began() -> None:
    timeline = AudioTimeline()
    timeline.handed(chunk(0, 1.0), at=10.0)
    timeline.handed(chunk(2, 1.0), at=11.0)  # sentence 1's synthesis failed
    assert timeline.heard(10.5) == 1
    assert timeline.heard(11.0) == 3


async def test_turns_are_kept_within_bounds_and_found_by_their_speech(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    proxy.fault("One.", "stall")
    turns = SpeechTurns(capacity=2, max_ahead=1, ttl=0.05)
    client = tts(proxy, piper)
    feeds = {name: Feed(f"{name.title()}.") for name in ("one", "two", "three")}
    for name, feed in feeds.items():
        turns.follow(TurnSpeech(name, feed.read))

    assert turns.get("one") is None  # the oldest made room
    assert turns.get(None) is None
    assert not turns.start("one", VOICE, client.synthesize)
    assert turns.start("two", VOICE, client.synthesize)
    assert turns.start("three", VOICE, client.synthesize)  # the other one ahead stops
    assert turns.running_ahead == 1

    turns.ended("three", " Three.  ")
    assert turns.spoken("Three.") is turns.get("three")
    assert turns.spoken("Two.") is None  # not ended yet
    assert turns.spoken("") is None
    await asyncio.sleep(0.1)  # its time is up
    assert turns.get("three") is None
    assert turns.running_ahead == 0
    turns.close()
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)
