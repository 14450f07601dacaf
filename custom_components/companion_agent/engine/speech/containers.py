"""The containers a voice's audio leaves in: a streaming WAV, or MP3 made in this process.

A streaming WAV states no length: its RIFF and data sizes are ``0xFFFFFFFF``, as ffmpeg
writes them to a pipe (a reader that takes a size of 0 literally plays nothing). MP3 is
encoded with LAME (``lameenc``, which the host installs on demand) as the audio comes, one
encoder per stream: a frame goes out as soon as LAME has one (MPEG-2 at 16 to 24 kHz:
576 samples, 26 ms at 22.05 kHz). Without lameenc there is no MP3 here, and a host
converts the WAV itself. The first chunk's format is the stream's; a chunk in another is
dropped and logged.
"""

from __future__ import annotations

import array
import asyncio
import importlib
import logging
import struct
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Literal

from ..errors import AudioFormatError
from .synthesizer import AudioChunk

LOGGER = logging.getLogger(__name__)

type Container = Literal["wav", "mp3"]
WAV: Container = "wav"
MP3: Container = "mp3"
MP3_KBPS = 64
"""Constant bit rate of the MP3 stream: plenty for one voice at 16 to 24 kHz."""
MP3_QUALITY = 5
"""LAME's encoding quality, 2 (best) to 7 (fastest): 5 takes about 9 ms a second of speech
here (2 takes 27 ms), which a Raspberry Pi can afford beside Piper."""
MP3_PIECE = 4096
"""PCM bytes encoded at a time (93 ms at 22.05 kHz), the loop free between pieces."""
STREAMING_SIZE = 0xFFFFFFFF
_PCM = 1


def wav_header(rate: int, width: int, channels: int) -> bytes:
    """Return the 44-byte header of a WAV stream of unknown length."""
    block = width * channels
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        STREAMING_SIZE,
        b"WAVE",
        b"fmt ",
        16,
        _PCM,
        channels,
        rate,
        rate * block,
        block,
        width * 8,
        b"data",
        STREAMING_SIZE,
    )


def mp3_available() -> bool:
    """Say whether MP3 can be made here: lameenc imports (blocking the first time)."""
    try:
        importlib.import_module("lameenc")
    except ImportError:
        return False
    return True


class Mp3Encoder:
    """One MP3 stream: 16-bit PCM in as it comes, MP3 frames out as LAME completes them."""

    def __init__(self, rate: int, channels: int) -> None:
        """Set up LAME for ``rate`` Hz and ``channels``; raise AudioFormatError without lameenc."""
        try:
            lameenc: Any = importlib.import_module("lameenc")
        except ImportError as err:
            raise AudioFormatError(f"no MP3 encoder: {err}") from err
        self._encoder = lameenc.Encoder()
        self._encoder.set_bit_rate(MP3_KBPS)
        self._encoder.set_in_sample_rate(rate)
        self._encoder.set_channels(channels)
        self._encoder.set_quality(MP3_QUALITY)
        self._encoder.silence()
        self._frame = 2 * channels
        self._held = b""

    def encode(self, pcm: bytes) -> bytes:
        """Return the MP3 frames ``pcm`` completes (often none: LAME waits for a frame)."""
        data = self._held + pcm
        whole = len(data) - len(data) % self._frame
        self._held = data[whole:]
        return bytes(self._encoder.encode(data[:whole])) if whole else b""

    def finish(self) -> bytes:
        """Return the last frames; the encoder takes nothing after this."""
        return bytes(self._encoder.flush())


def as_16_bit(audio: bytes, width: int) -> bytes:
    """Return ``width``-byte little-endian PCM as 16-bit (8-bit PCM is unsigned)."""
    if width == 2:
        return audio
    if width == 1:
        return array.array("h", ((sample - 128) << 8 for sample in audio)).tobytes()
    if width == 4:
        samples = array.array("i", audio[: len(audio) - len(audio) % 4])
        if sys.byteorder == "big":
            samples.byteswap()
        return array.array("h", (sample >> 16 for sample in samples)).tobytes()
    raise AudioFormatError(f"cannot make MP3 from {width * 8}-bit audio")


async def encoded(audio: AsyncIterator[AudioChunk], container: Container) -> AsyncGenerator[bytes]:
    """Yield ``audio`` in ``container``: a WAV header before the first PCM, or MP3 frames."""
    first: AudioChunk | None = None
    encoder: Mp3Encoder | None = None
    async for chunk in audio:
        if first is None:
            first = chunk
            if container == WAV:
                yield wav_header(chunk.rate, chunk.width, chunk.channels)
            else:
                encoder = Mp3Encoder(chunk.rate, chunk.channels)
        elif (chunk.rate, chunk.width, chunk.channels) != (first.rate, first.width, first.channels):
            LOGGER.warning(
                "Dropped audio of sentence %d: %d Hz, %d bytes, %d channels in a %d Hz stream",
                chunk.sentence,
                chunk.rate,
                chunk.width,
                chunk.channels,
                first.rate,
            )
            continue
        if encoder is None:
            yield chunk.audio
            continue
        pcm = as_16_bit(chunk.audio, chunk.width)
        for start in range(0, len(pcm), MP3_PIECE):
            if start:
                await asyncio.sleep(0)  # a long chunk (a whole sentence) must not hold the loop
            if frames := encoder.encode(pcm[start : start + MP3_PIECE]):
                yield frames
    if encoder is not None and (tail := encoder.finish()):
        yield tail
