"""WyomingTTS against the real wyoming-piper, directly and through a fault-injecting proxy."""

import asyncio
import io
import socket
import time
import wave
from contextlib import aclosing

import pytest

from custom_components.companion_agent.engine.errors import (
    SpeechConnectionError,
    SpeechError,
    SpeechVoiceNotFoundError,
)
from custom_components.companion_agent.engine.speech import AudioChunk, WyomingTTS
from tests.engine.speech import ONE_SENTENCE_AT_A_TIME, SENTENCES, recorded, settled
from tests.support.piper import PiperPeer
from tests.support.wyoming_proxy import FaultAction, WyomingProxy

ADVERTISED_NOT_INSTALLED = "en_US-lessac-medium"


async def speak(tts: WyomingTTS, sentences: tuple[str, ...]) -> list[AudioChunk]:
    """Return all audio for ``sentences``."""
    return [chunk async for chunk in tts.synthesize(recorded(sentences, []))]


def spoken(chunks: list[AudioChunk]) -> list[int]:
    """Return the sentence numbers in the order their audio arrived, once each."""
    order: list[int] = []
    for chunk in chunks:
        if not order or order[-1] != chunk.sentence:
            order.append(chunk.sentence)
    return order


async def test_describe_lists_the_joe_voice(piper: PiperPeer) -> None:
    info = await WyomingTTS(piper.host, piper.port).describe()

    joe = info.voice("en_US-joe-medium")
    assert joe is not None
    assert joe.languages == ("en_US",)
    assert joe.speakers == ()
    assert info.programs == ("piper",)
    assert info.supports_streaming is True


async def test_each_sentence_is_heard_before_the_next_is_sent(proxy: WyomingProxy) -> None:
    log: list[tuple[str, int]] = []
    tts = WyomingTTS(proxy.host, proxy.port)

    chunks: list[AudioChunk] = []
    async for chunk in tts.synthesize(recorded((SENTENCES[0], "  ", *SENTENCES[1:]), log)):
        if ("audio", chunk.sentence) not in log:
            log.append(("audio", chunk.sentence))
        chunks.append(chunk)

    # the blank one (pulled as 1) is never sent and never numbered
    assert log == ONE_SENTENCE_AT_A_TIME
    assert proxy.texts == list(SENTENCES)
    # one synthesize event a sentence, on one connection: no describe, no stream protocol
    assert proxy.event_types == ["synthesize"] * 3
    assert proxy.connections == 1
    assert {(c.rate, c.width, c.channels) for c in chunks} == {(22050, 2, 1)}
    for number in range(3):
        pcm = b"".join(c.audio for c in chunks if c.sentence == number)
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(22050)
            wav.writeframes(pcm)
        with wave.open(io.BytesIO(buffer.getvalue()), "rb") as wav:
            assert wav.getnframes() > 22050 // 4  # a quarter second at least


async def test_connection_refused_is_a_clear_error(socket_enabled: None) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tts = WyomingTTS("127.0.0.1", port)

    with pytest.raises(SpeechConnectionError) as raised:
        await tts.describe()
    assert (raised.value.host, raised.value.port) == ("127.0.0.1", port)
    with pytest.raises(SpeechConnectionError):
        await speak(tts, SENTENCES)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"this is not a wyoming event\n", "connection closed|malformed event"),
        (b'{"no": "type"}\n', "malformed event"),
        (b"[1, 2, 3]\n", "malformed event"),
    ],
)
async def test_a_server_that_answers_with_a_line_that_is_not_an_event_is_a_clear_error(
    socket_enabled: None, line: bytes, error: str
) -> None:
    """A real loopback server that answers every request with ``line``, then hangs up."""

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read the request, answer with the line, close."""
        await reader.readline()
        writer.write(line)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(garbage, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        tts = WyomingTTS("127.0.0.1", port)
        with pytest.raises(SpeechError, match=error) as raised:
            await tts.describe()
        assert (raised.value.host, raised.value.port) == ("127.0.0.1", port)
    finally:
        server.close()
        await server.wait_closed()


async def test_a_voice_the_server_advertises_but_lacks_is_named(piper: PiperPeer) -> None:
    tts = WyomingTTS(piper.host, piper.port, voice=ADVERTISED_NOT_INSTALLED)
    assert (await tts.describe()).voice(ADVERTISED_NOT_INSTALLED) is not None

    with pytest.raises(SpeechVoiceNotFoundError) as raised:
        await speak(tts, SENTENCES)
    assert raised.value.voice == ADVERTISED_NOT_INSTALLED
    assert ADVERTISED_NOT_INSTALLED in str(raised.value)


@pytest.mark.parametrize("action", ["drop", "stall"])
async def test_a_failed_sentence_is_sent_again_once(
    proxy: WyomingProxy, action: FaultAction
) -> None:
    proxy.fault(SENTENCES[1], action)
    # A stall is noticed at the read timeout; one long enough that a busy machine's Piper
    # is not taken for a stall on the sentences that go through.
    tts = WyomingTTS(proxy.host, proxy.port, read_timeout=4.0 if action == "stall" else 10.0)

    chunks = await speak(tts, SENTENCES)

    assert spoken(chunks) == [0, 1, 2]
    assert proxy.texts == list(SENTENCES)
    assert proxy.connections == 2


async def test_a_sentence_that_fails_twice_is_skipped(proxy: WyomingProxy) -> None:
    proxy.fault(SENTENCES[1], "drop", times=2)
    tts = WyomingTTS(proxy.host, proxy.port)

    chunks = await speak(tts, SENTENCES)

    assert spoken(chunks) == [0, 2]
    assert proxy.texts == [SENTENCES[0], SENTENCES[2]]
    assert proxy.connections == 3


async def test_cancelling_closes_the_socket_at_once(proxy: WyomingProxy) -> None:
    before = asyncio.all_tasks()
    proxy.fault(SENTENCES[1], "stall")
    tts = WyomingTTS(proxy.host, proxy.port, read_timeout=30.0)
    task = asyncio.create_task(speak(tts, SENTENCES))
    await asyncio.wait_for(proxy.stalled.wait(), 5)

    task.cancel()
    started = time.monotonic()
    async with asyncio.timeout(1.0):
        await proxy.wait_idle()

    assert time.monotonic() - started < 0.5
    assert task.cancelled()
    assert await settled(before) == set()


async def test_a_consumer_that_stops_closes_the_socket(proxy: WyomingProxy) -> None:
    before = asyncio.all_tasks()
    tts = WyomingTTS(proxy.host, proxy.port)

    async with aclosing(tts.synthesize(recorded(SENTENCES, []))) as audio:
        async for chunk in audio:
            assert chunk.sentence == 0
            break

    async with asyncio.timeout(1.0):
        await proxy.wait_idle()
    assert proxy.texts == [SENTENCES[0]]
    assert await settled(before) == set()
