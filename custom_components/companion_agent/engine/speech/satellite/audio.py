"""PCM on its way to a satellite's speaker: a streamed WAV unwrapped, reframed, converted.

A TTS stream is a WAV whose header counts no frames (or says ``0xFFFFFFFF``, as ffmpeg
writes it), maybe with other chunks (``LIST``) before ``data``: the header is read for its
format and the data size is never taken literally. What follows is PCM, cut into
events of whole frames. When the satellite wants another format than the audio has, it is
converted in process (wyoming's converter: rate, width, channels), chunk by chunk, with no
delay to speak of.
"""

from __future__ import annotations

import asyncio
import struct
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import TypeGuard

from wyoming.audio import AudioChunk as WyomingChunk
from wyoming.audio import AudioChunkConverter

from ...errors import AudioFormatError

# A WAV header longer than this (a huge LIST chunk before the data) is refused.
MAX_WAV_HEADER = 4096
_PCM = 1
_EXTENSIBLE = 0xFFFE
_MAX_RATE = 192_000
_MAX_CHANNELS = 2  # the converter makes mono or stereo, from mono or stereo


@dataclass(frozen=True, slots=True, kw_only=True)
class PcmFormat:
    """Raw PCM: samples a second, bytes a sample, channels (interleaved)."""

    rate: int
    width: int
    channels: int

    @property
    def frame_bytes(self) -> int:
        """Return the size of one frame: a sample of every channel."""
        return self.width * self.channels

    def seconds(self, size: int) -> float:
        """Return how long ``size`` bytes of this audio play."""
        return size / (self.rate * self.frame_bytes)

    def bytes_for(self, seconds: float) -> int:
        """Return the size of ``seconds`` of this audio, in whole frames (at least one)."""
        return max(1, round(seconds * self.rate)) * self.frame_bytes

    @classmethod
    def checked(cls, rate: object, width: object, channels: object) -> PcmFormat:
        """Return the format, or raise AudioFormatError if no speaker could play it."""
        if not (_is_int(rate) and _is_int(width) and _is_int(channels)):
            raise AudioFormatError(f"not a PCM format: {(rate, width, channels)!r}")
        if not (1000 <= rate <= _MAX_RATE and 1 <= width <= 4 and 1 <= channels <= _MAX_CHANNELS):
            raise AudioFormatError(f"unplayable PCM: {rate} Hz, {width} bytes, {channels} ch")
        return cls(rate=rate, width=width, channels=channels)


def _is_int(value: object) -> TypeGuard[int]:
    """Say whether ``value`` is an integer (a bool is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def parse_wav_header(data: bytes) -> tuple[PcmFormat, int] | None:
    """Return the format of a streamed WAV and where its PCM begins; None: need more bytes.

    Raise AudioFormatError for what is no PCM WAV, or a header over ``MAX_WAV_HEADER``.
    """
    if len(data) < 12:
        return None
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise AudioFormatError("not a WAV stream")
    offset, found = 12, None
    while True:
        if offset + 8 > len(data):
            break
        chunk_id, size = data[offset : offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        body = offset + 8
        if chunk_id == b"data":
            if found is None:
                raise AudioFormatError("WAV data before its format")
            return found, body
        if body + size > MAX_WAV_HEADER:
            raise AudioFormatError("WAV header too long")
        if body + size > len(data):
            break
        if chunk_id == b"fmt ":
            found = _wav_format(data[body : body + size])
        offset = body + size + size % 2  # chunks are padded to an even size
    if len(data) > MAX_WAV_HEADER:
        raise AudioFormatError("WAV header too long")
    return None


def _wav_format(fmt: bytes) -> PcmFormat:
    """Return the PCM format of a WAV ``fmt`` chunk, or raise AudioFormatError."""
    if len(fmt) < 16:
        raise AudioFormatError("WAV format chunk too short")
    tag, channels, rate, _byte_rate, _align, bits = struct.unpack_from("<HHIIHH", fmt)
    if tag == _EXTENSIBLE and len(fmt) >= 26:
        tag = struct.unpack_from("<H", fmt, 24)[0]
    if tag != _PCM or bits % 8:
        raise AudioFormatError(f"WAV is not integer PCM (format {tag}, {bits} bits)")
    return PcmFormat.checked(rate, bits // 8, channels)


async def unwrap_wav(stream: AsyncIterable[bytes]) -> tuple[PcmFormat, AsyncIterator[bytes]]:
    """Read a streamed WAV's header; return its format and its PCM as it comes.

    Raise AudioFormatError if the stream is no PCM WAV or ends inside its header.
    """
    pieces = aiter(stream)
    head = b""
    while (parsed := parse_wav_header(head)) is None:
        try:
            head += await anext(pieces)
        except StopAsyncIteration:
            raise AudioFormatError("the stream ended inside its WAV header") from None
    fmt, start = parsed

    async def pcm() -> AsyncIterator[bytes]:
        """Yield what came with the header, then the rest of the stream."""
        if len(head) > start:
            yield head[start:]
        async for piece in pieces:
            yield piece

    return fmt, pcm()


class ReadAhead:
    """Read PCM as fast as it is made (up to ``limit`` bytes ahead), while it plays slower.

    ``produced`` says how much audio its source has made so far: with the seconds played,
    that tells how far into the text a barge-in came. ``done`` says the source has ended.
    A source that fails raises its error where the audio is taken, after what came before.
    """

    def __init__(self, source: AsyncIterator[bytes], limit: int) -> None:
        """Start reading ``source`` at once, holding at most ``limit`` bytes unplayed."""
        self.produced = 0
        self.done = False
        self._limit = limit
        self._held: deque[bytes] = deque()
        self._size = 0
        self._changed = asyncio.Event()
        self._error: BaseException | None = None
        self._task = asyncio.create_task(self._read(source), name="satellite read-ahead")

    async def _read(self, source: AsyncIterator[bytes]) -> None:
        """Take the source's pieces while there is room; note its end or its error."""
        try:
            async for piece in source:
                while self._size >= self._limit:
                    self._changed.clear()
                    await self._changed.wait()
                self._held.append(piece)
                self._size += len(piece)
                self.produced += len(piece)
                self._changed.set()
        except Exception as err:  # the source's own error, raised where the audio is taken
            self._error = err
        finally:
            self.done = True
            self._changed.set()

    async def pieces(self) -> AsyncIterator[bytes]:
        """Yield the audio read so far, then the rest as it comes; close the read when done."""
        try:
            while True:
                if self._held:
                    piece = self._held.popleft()
                    self._size -= len(piece)
                    self._changed.set()
                    yield piece
                elif self.done:
                    if self._error is not None:
                        raise self._error
                    return
                else:
                    self._changed.clear()
                    await self._changed.wait()
        finally:
            self._task.cancel()


class PcmFramer:
    """Cut PCM that comes in pieces of any size into chunks of whole frames."""

    def __init__(self, fmt: PcmFormat, chunk_bytes: int) -> None:
        """Make chunks of ``chunk_bytes`` (rounded down to whole frames, at least one)."""
        frame = fmt.frame_bytes
        self._frame = frame
        self._size = max(frame, chunk_bytes - chunk_bytes % frame)
        self._held = bytearray()

    def push(self, data: bytes) -> list[bytes]:
        """Take ``data``; return every full chunk there now is."""
        self._held.extend(data)
        whole = len(self._held) - len(self._held) % self._size
        chunks = [bytes(self._held[i : i + self._size]) for i in range(0, whole, self._size)]
        del self._held[:whole]
        return chunks

    def flush(self) -> bytes:
        """Return what is left, in whole frames (a broken last frame is dropped)."""
        whole = len(self._held) - len(self._held) % self._frame
        rest = bytes(self._held[:whole])
        self._held.clear()
        return rest


class PcmConverter:
    """Convert PCM from one format to another, chunk by chunk (resampling keeps its state)."""

    def __init__(self, source: PcmFormat, target: PcmFormat) -> None:
        """Convert ``source`` audio to ``target``; the same format passes as it is."""
        self.source = source
        self.target = target
        self._converter = (
            None
            if source == target
            else AudioChunkConverter(rate=target.rate, width=target.width, channels=target.channels)
        )

    def convert(self, pcm: bytes) -> bytes:
        """Return ``pcm`` (whole frames of the source format) in the target format."""
        if self._converter is None or not pcm:
            return pcm
        chunk = WyomingChunk(
            rate=self.source.rate,
            width=self.source.width,
            channels=self.source.channels,
            audio=pcm,
        )
        return bytes(self._converter.convert(chunk).audio)
