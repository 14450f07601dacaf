"""Speech head starts against the real wyoming-piper (through the fault-injecting proxy)."""

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

from custom_components.companion_agent.engine.errors import SpeechConnectionError
from custom_components.companion_agent.engine.speech import WyomingTTS
from custom_components.companion_agent.engine.speech.head_start import SpeechHeadStarts, SpeechKey
from tests.support.piper import PiperPeer
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 10.0
VOICE = "joe"


def tts(proxy: WyomingProxy, piper: PiperPeer) -> WyomingTTS:
    """Return a client speaking piper's voice through the proxy."""
    return WyomingTTS(proxy.host, proxy.port, voice=piper.voice, streaming=True)


async def sentences(*texts: str) -> AsyncIterator[str]:
    """Yield ``texts`` one by one."""
    for text in texts:
        yield text


def test_keys_ignore_spacing() -> None:
    assert SpeechKey.of(VOICE, "  Good\n morning. ") == SpeechKey.of(VOICE, "Good morning.")
    assert SpeechKey.of(VOICE, "Good morning.") != SpeechKey.of("other", "Good morning.")


async def test_a_claimed_head_start_plays_what_piper_made_then_the_rest(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    heads = SpeechHeadStarts()
    client = tts(proxy, piper)
    assert heads.start(SpeechKey.of(VOICE, "Good morning."), "t1", client.synthesize)
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)

    audio = heads.speak(VOICE, sentences("Good  morning.", "Tea is ready."), client.synthesize)
    chunks = [chunk.audio async for chunk in audio]

    assert proxy.texts == ["Good morning.", "Tea is ready."]
    assert b"".join(chunks) == b"".join(proxy.audio)
    assert heads.waiting == 0
    await proxy.wait_idle()


async def test_a_head_start_played_to_its_end_reports_the_turns_audio_length(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    heads = SpeechHeadStarts()
    client = tts(proxy, piper)
    lengths: list[tuple[str, float]] = []
    assert heads.start(SpeechKey.of(VOICE, "Good morning."), "t1", client.synthesize)
    audio = heads.speak(
        VOICE,
        sentences("Good morning.", "Tea is ready."),
        client.synthesize,
        lambda trace_id, seconds: lengths.append((trace_id, seconds)),
    )
    chunks = [chunk async for chunk in audio]

    (first, *_) = chunks
    pcm = sum(len(chunk.audio) for chunk in chunks)
    assert [trace for trace, _ in lengths] == ["t1"]
    assert lengths[0][1] == pytest.approx(pcm / (first.rate * first.width * first.channels))
    assert 1.0 < lengths[0][1] < 5.0  # two short sentences
    await proxy.wait_idle()

    stopped: list[tuple[str, float]] = []
    assert heads.start(SpeechKey.of(VOICE, "Hello."), "t2", client.synthesize)
    audio = heads.speak(
        VOICE,
        sentences("Hello.", "More to say."),
        client.synthesize,
        lambda trace_id, seconds: stopped.append((trace_id, seconds)),
    )
    await anext(audio)
    heads.drop_turn("t2")  # spoken over: what it played is not its length
    _ = [chunk async for chunk in audio]
    assert stopped == []
    await proxy.wait_idle()


async def test_the_same_sentence_is_never_started_twice(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    heads = SpeechHeadStarts()
    client = tts(proxy, piper)
    key = SpeechKey.of(VOICE, "Good morning.")
    assert heads.start(key, "t1", client.synthesize)
    assert not heads.start(key, "t1", client.synthesize)
    assert not heads.start(SpeechKey.of(VOICE, "  "), "t1", client.synthesize)
    assert heads.waiting == 1
    await asyncio.wait_for(proxy.wait_asked(1), TIMEOUT)
    await proxy.wait_idle()
    assert proxy.texts == ["Good morning."]
    heads.close()


async def test_two_turns_with_the_same_words_each_get_theirs_the_newest_first(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    heads = SpeechHeadStarts()
    client = tts(proxy, piper)
    key = SpeechKey.of(VOICE, "Sure.")
    assert heads.start(key, "older", client.synthesize)
    assert heads.start(key, "newer", client.synthesize)

    newest = heads.claim(key)
    older = heads.claim(key)

    assert newest is not None
    assert older is not None
    assert (newest.trace_id, older.trace_id) == ("newer", "older")
    assert heads.claim(key) is None
    heads.release(newest)
    heads.release(older)
    assert heads.playing == 0
    await proxy.wait_idle()


async def test_the_oldest_head_start_makes_room_and_is_cancelled(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    proxy.fault("One.", "stall")
    heads = SpeechHeadStarts(capacity=2)
    client = tts(proxy, piper)
    assert heads.start(SpeechKey.of(VOICE, "One."), "t1", client.synthesize)
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)
    assert heads.start(SpeechKey.of(VOICE, "Two."), "t2", client.synthesize)
    assert heads.start(SpeechKey.of(VOICE, "Three."), "t3", client.synthesize)

    assert heads.waiting == 2
    assert heads.claim(SpeechKey.of(VOICE, "One.")) is None
    heads.close()
    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)  # the stalled one's socket too


async def test_an_unclaimed_head_start_expires_and_closes_its_socket(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    proxy.fault("Nobody asks.", "stall")
    heads = SpeechHeadStarts(ttl=0.05)
    assert heads.start(SpeechKey.of(VOICE, "Nobody asks."), "t1", tts(proxy, piper).synthesize)
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)

    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)  # closed when it expired
    assert heads.waiting == 0


async def test_dropping_a_turn_stops_the_stream_that_plays_its_head_start(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    heads = SpeechHeadStarts()
    client = tts(proxy, piper)
    proxy.fault("The second one.", "stall")
    assert heads.start(SpeechKey.of(VOICE, "The first one."), "t1", client.synthesize)
    audio = heads.speak(VOICE, sentences("The first one.", "The second one."), client.synthesize)
    played: list[bytes] = []

    async def listen() -> None:
        async for chunk in audio:  # as HA's TTS cache reads: eagerly
            played.append(chunk.audio)

    listener = asyncio.create_task(listen())
    await asyncio.wait_for(proxy.stalled.wait(), TIMEOUT)  # the second is at piper
    heads.drop_turn("t2")  # another turn: nothing happens
    assert heads.playing == 1

    heads.drop_turn("t1")
    await asyncio.wait_for(listener, TIMEOUT)

    await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)
    assert heads.playing == 0
    assert proxy.texts == ["The first one."]
    assert b"".join(played) == b"".join(proxy.audio)


async def test_a_failed_head_start_raises_in_the_stream(socket_enabled: None) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    heads = SpeechHeadStarts()
    client = WyomingTTS("127.0.0.1", port, voice=VOICE, streaming=True)
    assert heads.start(SpeechKey.of(VOICE, "Hello."), "t1", client.synthesize)

    with pytest.raises(SpeechConnectionError):
        async for _chunk in heads.speak(VOICE, sentences("Hello."), client.synthesize):
            pass
    assert heads.waiting == 0


async def test_without_a_head_start_the_stream_speaks_as_usual(
    proxy: WyomingProxy, piper: PiperPeer
) -> None:
    heads = SpeechHeadStarts()
    client = tts(proxy, piper)
    audio = heads.speak(VOICE, sentences("Hello there.", "Bye."), client.synthesize)
    chunks = [chunk.audio async for chunk in audio]
    assert proxy.texts == ["Hello there.", "Bye."]
    assert b"".join(chunks) == b"".join(proxy.audio)
    assert [c async for c in heads.speak(VOICE, sentences(), client.synthesize)] == []
