"""A turn's speech against the real wyoming-piper (through the fault-injecting proxy).

The turn's sentences come from ``Feed`` (``tests/support/speech_feed.py``), which follows
the rules of ``Turn.guessed_speech()``.
"""

import asyncio
import socket
import time

import pytest

from custom_components.companion_agent.engine.errors import SpeechConnectionError
from custom_components.companion_agent.engine.speech import (
    AudioChunk,
    AudioTimeline,
    SpeechTurns,
    TurnSpeech,
    WyomingTTS,
)
from custom_components.companion_agent.engine.speech.turn_speech import (
    KEEP_ALIVE_SECONDS,
    MAX_WRITTEN,
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


async def test_a_second_stream_of_the_turn_gets_the_same_audio_and_piper_speaks_it_once(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    """The host plays the turn itself; HA's stream, which asks after it, reads the same audio."""
    speech, client = started(proxy, piper, VOICE)
    played = speech.listen(VOICE, client.synthesize)
    first = await anext(played.chunks)
    again = speech.listen(VOICE, client.synthesize)
    second = [chunk async for chunk in again.chunks]
    rest = [chunk async for chunk in played.chunks]

    assert played.primary
    assert not again.primary
    assert proxy.texts == ["Good morning.", "Tea is ready."]  # each once, for both readers
    assert b"".join(c.audio for c in (first, *rest)) == b"".join(proxy.audio)
    assert b"".join(c.audio for c in second) == b"".join(proxy.audio)
    assert [n for n, _ in speech.timeline.starts] == [0, 1]  # the timeline is the first's
    assert speech.timeline.seconds == pytest.approx(
        sum(len(c.audio) for c in (first, *rest)) / 44100
    )
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)


async def test_a_reader_that_comes_after_the_synthesis_ended_replays_it_without_piper(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    speech, client = started(proxy, piper, VOICE)
    heard = [chunk async for chunk in speech.audio(VOICE, client.synthesize)]
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)
    connections = proxy.connections

    later = [chunk async for chunk in speech.audio(VOICE, client.synthesize)]

    assert later == heard
    assert proxy.connections == connections  # not even a connection
    assert proxy.texts == ["Good morning.", "Tea is ready."]


async def test_every_reader_leaving_stops_the_synthesis(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    proxy.fault("The second one.", "stall")
    feed = Feed("The first one.", "The second one.", "The third one.")
    speech = TurnSpeech("t1", feed.read)
    client = tts(proxy, piper)
    audio = speech.audio(VOICE, client.synthesize)
    await anext(audio)
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)

    await audio.aclose()  # the only reader left: nobody hears the rest

    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)
    assert "The third one." not in proxy.texts


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


def is_silence(chunk: AudioChunk) -> bool:
    """Say whether ``chunk`` is the keep-alive's silence (half a second of zeros)."""
    seconds = len(chunk.audio) / (chunk.rate * chunk.width * chunk.channels)
    return seconds == pytest.approx(KEEP_ALIVE_SECONDS) and not any(chunk.audio)


async def listen_through_a_pause(
    proxy: WyomingProxy, piper: PiperPeer, *, waits_for_a_tool: bool
) -> list[tuple[float, AudioChunk]]:
    """Speak one sentence, pause three seconds (a tool, or not), then one more; note arrivals."""
    feed = Feed("Let me look.")
    waiting = False
    speech = TurnSpeech("t1", feed.read, waiting=lambda: waiting)
    client = tts(proxy, piper)
    arrivals: list[tuple[float, AudioChunk]] = []

    async def listen() -> None:
        async for chunk in speech.audio(VOICE, client.synthesize):
            arrivals.append((time.monotonic(), chunk))

    listener = asyncio.create_task(listen())
    await asyncio.wait_for(proxy.wait_finished(1), TIMEOUT)
    waiting = waits_for_a_tool
    await asyncio.sleep(3.0)
    waiting = False
    feed.add("The door is locked.")
    feed.end()
    await asyncio.wait_for(listener, TIMEOUT)
    return arrivals


def longest_dry_spell(arrivals: list[tuple[float, AudioChunk]]) -> float:
    """Return the longest time a device playing the chunks as they came had nothing to play."""
    played = AudioTimeline()
    longest = 0.0
    for at, chunk in arrivals:
        if played.ends_at is not None:
            longest = max(longest, at - played.ends_at)
        played.handed(chunk, at)
    return longest


async def test_while_the_turn_waits_for_a_tool_its_stream_never_runs_dry(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    arrivals = await listen_through_a_pause(proxy, piper, waits_for_a_tool=True)

    chunks = [chunk for _, chunk in arrivals]
    silence = [chunk for chunk in chunks if is_silence(chunk)]
    assert len(silence) >= 3  # the pause, filled half a second at a time
    assert {chunk.sentence for chunk in silence} == {0}  # part of the sentence before
    assert longest_dry_spell(arrivals) < 0.5
    spoken = b"".join(chunk.audio for chunk in chunks if not is_silence(chunk))
    assert spoken == b"".join(proxy.audio)  # the sentences' own audio, whole and in order
    assert not is_silence(chunks[0])  # nothing before the first audio (its format)


async def test_a_pause_that_is_no_tool_wait_is_left_as_it_is(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    arrivals = await listen_through_a_pause(proxy, piper, waits_for_a_tool=False)

    assert not [chunk for _, chunk in arrivals if is_silence(chunk)]
    assert longest_dry_spell(arrivals) > 1.0  # the pause went to the device as it was


async def test_a_stream_finds_a_running_turn_by_the_text_it_wrote(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    turns = SpeechTurns()
    old, new = Feed("Old."), Feed("New.")
    older = turns.follow(TurnSpeech("older", old.read))
    newer = turns.follow(TurnSpeech("newer", new.read))
    older.wrote("Sure [happy]. The kettle")
    newer.wrote("Sure [happy]. The kettle is on")
    older.wrote(" is on and the tea")

    assert turns.writing("Sure [happy]. The kettle is on") is newer  # the newest first
    newer.listen(VOICE, tts(proxy, piper).synthesize)
    assert turns.writing("Sure [happy]. The kettle is on") is older  # one nobody read, first
    assert turns.writing("Sure [happy]. The kettle is on and the tea") is older
    assert turns.writing("Sure [sad].") is None
    assert turns.writing("  ") is None
    older.stop()
    assert turns.writing("Sure [happy]. The kettle is on and") is None  # a stopped turn
    turns.close()


def test_a_stream_finds_a_running_turn_by_its_lines_joined_by_spaces() -> None:
    """HA hands a short reply it did not stream as one speech, its lines joined by spaces."""
    turns = SpeechTurns()
    turn = turns.follow(TurnSpeech("short", Feed("One moment, please. Hi.").read))
    turn.wrote("One moment, please.\n")
    turn.wrote("Hi.")
    assert turns.writing("One moment, please. Hi.") is turn
    assert turns.writing("One moment,  please.\n\nHi.") is turn
    assert turns.writing("One moment, please. Hello.") is None
    long = turns.follow(TurnSpeech("long", Feed("Long.").read))
    long.wrote("Word\n" * (MAX_WRITTEN // 5 + 10))  # more than is kept of it
    assert turns.writing(" ".join(["Word"] * (MAX_WRITTEN // 5 + 10))) is long
    assert turns.writing(" ".join(["Word"] * (MAX_WRITTEN // 5 + 10)) + " Other") is long
    assert turns.writing("Word Other") is None
    turns.close()
