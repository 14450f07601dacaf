"""Audio on its way to a satellite: streamed WAV headers, framing, conversion, reading ahead."""

from __future__ import annotations

import asyncio
import io
import struct
import wave
from collections.abc import AsyncIterator

import pytest

from custom_components.companion_agent.engine.errors import AudioFormatError
from custom_components.companion_agent.engine.speech.satellite.audio import (
    MAX_WAV_HEADER,
    PcmConverter,
    PcmFormat,
    PcmFramer,
    ReadAhead,
    parse_wav_header,
    unwrap_wav,
)

PIPER = PcmFormat(rate=22050, width=2, channels=1)


def python_wav_header(fmt: PcmFormat = PIPER) -> bytes:
    """Return the header Python's ``wave`` writes for a stream: it counts no frames."""
    with io.BytesIO() as out:
        with wave.open(out, "wb") as writer:
            writer.setframerate(fmt.rate)
            writer.setsampwidth(fmt.width)
            writer.setnchannels(fmt.channels)
        return out.getvalue()


def ffmpeg_wav_header() -> bytes:
    """Return a header as ffmpeg writes one to a pipe: sizes 0xFFFFFFFF, a LIST chunk first."""
    listing = b"INFOISFT" + struct.pack("<I", 14) + b"Lavf61.7.100\0\0"
    fmt = struct.pack("<HHIIHH", 1, 1, 16000, 32000, 2, 16)
    return (
        b"RIFF\xff\xff\xff\xffWAVE"
        + b"LIST"
        + struct.pack("<I", len(listing))
        + listing
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data\xff\xff\xff\xff"
    )


def test_a_streamed_wav_header_gives_its_format_and_where_the_pcm_begins() -> None:
    """Python's zero-frame header and ffmpeg's 0xFFFFFFFF one with a LIST chunk both read."""
    header = python_wav_header()
    assert parse_wav_header(header + b"\1\2") == (PIPER, len(header))
    header = ffmpeg_wav_header()
    assert parse_wav_header(header) == (PcmFormat(rate=16000, width=2, channels=1), len(header))


def test_a_header_in_pieces_needs_more_until_it_is_whole() -> None:
    """Every cut of the header short of ``data`` asks for more bytes."""
    header = ffmpeg_wav_header()
    assert all(parse_wav_header(header[:cut]) is None for cut in range(len(header)))


@pytest.mark.parametrize(
    "data",
    [
        b"ID3\x04" + bytes(40),  # an MP3
        b"RIFF\0\0\0\0WAVEdata\0\0\0\0",  # data with no format
        b"RIFF\0\0\0\0WAVEfmt " + struct.pack("<IHHIIHH", 16, 3, 1, 16000, 64000, 4, 32),  # floats
        b"RIFF\0\0\0\0WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 6, 16000, 0, 12, 16),  # 6 ch
        b"RIFF\0\0\0\0WAVEJUNK" + struct.pack("<I", MAX_WAV_HEADER) + bytes(MAX_WAV_HEADER),
    ],
)
def test_what_is_no_playable_pcm_wav_is_refused(data: bytes) -> None:
    """Not a WAV, no format, not integer PCM, too many channels, a header without end."""
    with pytest.raises(AudioFormatError):
        parse_wav_header(data)


async def pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    """Yield ``data`` in pieces of ``size`` bytes."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def test_unwrap_wav_yields_the_pcm_whatever_the_pieces() -> None:
    """A header split across pieces, PCM in the same piece as its end: all of the PCM."""
    pcm = bytes(range(256)) * 20
    fmt, audio = await unwrap_wav(pieces(python_wav_header() + pcm, 7))
    assert fmt == PIPER
    assert b"".join([piece async for piece in audio]) == pcm


async def test_a_stream_that_ends_in_its_header_is_refused() -> None:
    """No PCM and no end of header."""
    with pytest.raises(AudioFormatError):
        await unwrap_wav(pieces(python_wav_header()[:20], 5))


def test_the_framer_makes_whole_frames_of_the_chunk_size() -> None:
    """Odd pieces in; chunks of the size, then the rest in whole frames."""
    stereo = PcmFormat(rate=16000, width=2, channels=2)
    framer = PcmFramer(stereo, 10)  # 10 bytes: 2 whole frames of 4 bytes (8)
    chunks = framer.push(bytes(3)) + framer.push(bytes(20))
    assert [len(c) for c in chunks] == [8, 8]
    assert len(framer.flush()) == 4  # 23 - 16 = 7 bytes: one whole frame, 3 dropped


def test_the_converter_resamples_and_keeps_its_state_across_chunks() -> None:
    """22.05 kHz mono to 16 kHz stereo, in pieces: the length of the whole, twice the channels."""
    target = PcmFormat(rate=16000, width=2, channels=2)
    converter = PcmConverter(PIPER, target)
    second = bytes(PIPER.rate * 2)
    out = b"".join(converter.convert(second[i : i + 882]) for i in range(0, len(second), 882))
    assert abs(len(out) - 16000 * 4) <= 8
    same = PcmConverter(PIPER, PIPER)
    assert same.convert(b"\1\2") == b"\1\2"


async def test_read_ahead_takes_the_source_as_fast_as_it_comes() -> None:
    """What was made is known before it is played; the end and the order are kept."""
    gate = asyncio.Event()

    async def source() -> AsyncIterator[bytes]:
        for index in range(5):
            yield bytes([index]) * 10
        await gate.wait()
        yield b"end"

    ahead = ReadAhead(source(), limit=1000)
    await asyncio.sleep(0.01)
    assert (ahead.produced, ahead.done) == (50, False)
    gate.set()
    got = b"".join([piece async for piece in ahead.pieces()])
    assert got == b"".join(bytes([i]) * 10 for i in range(5)) + b"end"
    assert ahead.done


async def test_read_ahead_holds_at_most_its_limit_and_raises_the_sources_error() -> None:
    """A source faster than the speaker waits at the limit; its error comes after its audio."""

    async def source() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield bytes(100)
        raise AudioFormatError("broken")

    ahead = ReadAhead(source(), limit=300)
    await asyncio.sleep(0.01)
    assert ahead.produced == 300
    taken: list[bytes] = []

    async def take() -> None:
        """Take every piece there is."""
        async for piece in ahead.pieces():
            taken.append(piece)

    with pytest.raises(AudioFormatError, match="broken"):
        await take()
    assert len(b"".join(taken)) == 10_000
