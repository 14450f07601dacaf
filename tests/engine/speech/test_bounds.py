"""What a hostile Wyoming server can make the clients do: bounded time, audio and memory.

Each server runs in a process of its own (``tests/support/hostile_wyoming.py``), so the
resident memory measured is this process's, the client's. Memory is a measurement around
the call, not a timing: the bound is 50 MB whatever the machine's speed.
"""

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator

import pytest

from custom_components.companion_agent.engine.errors import SpeechTranscribeError
from custom_components.companion_agent.engine.speech import WyomingSTT, WyomingTTS
from custom_components.companion_agent.engine.speech import wyoming_tts as tts_module
from custom_components.companion_agent.engine.speech.audio_timeline import chunk_seconds
from custom_components.companion_agent.engine.speech.wyoming_connection import (
    MalformedEventError,
    OversizedEventError,
    read_event,
)
from custom_components.companion_agent.engine.speech.wyoming_stt import MAX_TRANSCRIPT_CHARS
from tests.support.hostile_wyoming import HostileServer, Mode
from tests.support.rss import MB, RssPeak

TEXT = "Hello there."
TIMEOUT = 60.0
RSS_BOUND = 50 * MB


@pytest.fixture
def hostile(socket_enabled: None, request: pytest.FixtureRequest) -> Iterator[HostileServer]:
    """Run the hostile server in the mode the test's parameter names."""
    mode: Mode = request.param
    with HostileServer(mode) as server:
        yield server


async def one(text: str) -> AsyncIterator[str]:
    """Yield one sentence."""
    yield text


async def silence() -> AsyncIterator[bytes]:
    """Yield a second of silence."""
    yield bytes(32000)


@pytest.mark.parametrize("hostile", ["endless-audio"], indirect=True)
async def test_endless_audio_ends_at_the_sentences_bound_in_bounded_memory(
    hostile: HostileServer, caplog: pytest.LogCaptureFixture
) -> None:
    tts = WyomingTTS(hostile.host, hostile.port)
    bound = tts_module.AUDIO_FLOOR + tts_module.AUDIO_PER_CHAR * len(TEXT)
    seconds = 0.0
    async with RssPeak() as memory, asyncio.timeout(TIMEOUT):
        async for chunk in tts.synthesize(one(TEXT)):
            seconds += chunk_seconds(chunk)

    assert bound - 0.1 <= seconds <= bound  # up to the bound, never past it
    assert memory.growth < RSS_BOUND
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert hostile.server in warning.getMessage()
    assert "skipped" in warning.getMessage()


@pytest.mark.parametrize("hostile", ["huge-chunk"], indirect=True)
async def test_a_declared_300_mib_chunk_is_never_read(
    hostile: HostileServer, caplog: pytest.LogCaptureFixture
) -> None:
    tts = WyomingTTS(hostile.host, hostile.port)
    async with RssPeak() as memory, asyncio.timeout(TIMEOUT):
        chunks = [chunk async for chunk in tts.synthesize(one(TEXT))]

    assert chunks == []
    assert memory.growth < RSS_BOUND
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert hostile.server in warning.getMessage()
    assert "oversized" in warning.getMessage()  # skipped at once: no second try


async def test_a_server_that_trickles_audio_is_cut_off_by_the_waiting_budget(
    socket_enabled: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tts_module, "AUDIO_FLOOR", 0.3)
    monkeypatch.setattr(tts_module, "AUDIO_PER_CHAR", 0.0)
    chunk = json.dumps({"type": "audio-chunk", "data": {"rate": 22050}, "payload_length": 2})

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Send two bytes of audio every 50 ms, for ever."""
        await reader.readline()
        while True:
            writer.write(chunk.encode() + b"\n\x00\x00")
            await writer.drain()
            await asyncio.sleep(0.05)

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, asyncio.timeout(TIMEOUT):
        chunks = [c async for c in WyomingTTS("127.0.0.1", port).synthesize(one(TEXT))]

    assert 3 <= len(chunks) <= 8  # about 0.3 s of waiting, then the sentence is skipped
    assert "took too long" in caplog.text
    assert f"127.0.0.1:{port}" in caplog.text


@pytest.mark.parametrize("hostile", ["endless-transcript"], indirect=True)
async def test_an_endless_transcript_ends_at_its_cap(
    hostile: HostileServer, caplog: pytest.LogCaptureFixture
) -> None:
    stt = WyomingSTT(hostile.host, hostile.port)
    async with RssPeak() as memory, asyncio.timeout(TIMEOUT):
        heard = await stt.transcribe(silence())

    assert len(heard.text) == MAX_TRANSCRIPT_CHARS
    assert memory.growth < RSS_BOUND
    assert hostile.server in caplog.text


@pytest.mark.parametrize("hostile", ["huge-transcript"], indirect=True)
async def test_a_huge_transcript_is_refused_unread(hostile: HostileServer) -> None:
    stt = WyomingSTT(hostile.host, hostile.port)
    async with RssPeak() as memory, asyncio.timeout(TIMEOUT):
        with pytest.raises(SpeechTranscribeError, match="oversized") as raised:
            await stt.transcribe(silence())

    assert memory.growth < RSS_BOUND
    assert (raised.value.host, raised.value.port) == (hostile.host, hostile.port)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b'{"type": "x", "payload_length": 2000000}\n', OversizedEventError),
        (b'{"type": "x", "data_length": 300000}\n', OversizedEventError),
        (b'{"type": "x", "payload_length": -1}\n', MalformedEventError),
        (b'{"type": "x", "payload_length": true}\n', MalformedEventError),
        (b'{"type": "x", "data": [1]}\n', MalformedEventError),
        (b'{"type": 3}\n', MalformedEventError),
        (b"[1, 2]\n", MalformedEventError),
        (b"not json\n", ValueError),
        (b'{"type": "x", "payload_length": 4}\nab', asyncio.IncompleteReadError),
        (b'{"type": "x"', asyncio.IncompleteReadError),
    ],
)
async def test_the_reader_checks_a_header_before_reading_what_it_declares(
    data: bytes, error: type[Exception]
) -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    with pytest.raises(error):
        await read_event(reader)


async def test_the_reader_reads_what_the_wyoming_library_writes() -> None:
    reader = asyncio.StreamReader()
    header = {"type": "audio-chunk", "data": {"rate": 1}, "data_length": 12, "payload_length": 3}
    reader.feed_data(json.dumps(header).encode() + b'\n{"width": 2}abc')
    reader.feed_eof()
    event = await read_event(reader)
    assert event is not None
    assert (event.type, event.data, event.payload) == (
        "audio-chunk",
        {"rate": 1, "width": 2},
        b"abc",
    )
    assert await read_event(reader) is None
