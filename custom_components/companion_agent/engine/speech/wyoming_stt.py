"""A Wyoming speech-to-text client: audio out as it comes, the transcript back.

A Wyoming ASR server takes audio in any format its ``audio-start`` states and converts it
itself (wyoming-faster-whisper resamples to 16 kHz, 16-bit mono), and its ``info`` names no
format, so the client sends what it is given; 16 kHz, 16-bit mono is what Home Assistant's
Assist pipeline delivers and the default here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass

from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.info import Describe

from ..chars import clean_text
from ..errors import SpeechError, SpeechTranscribeError
from .info import AsrInfo, parse_asr_info
from .wyoming_connection import WyomingConnection, open_wyoming

LOGGER = logging.getLogger(__name__)

DEFAULT_RATE = 16000
DEFAULT_WIDTH = 2
DEFAULT_CHANNELS = 1
# One audio-chunk event carries at most this much audio; larger pieces are split.
MAX_CHUNK_BYTES = 32000
# A transcript longer than this is cut, and a streamed one ends there: a hostile server
# cannot grow it forever (one event's data is capped before it is read: wyoming_connection).
MAX_TRANSCRIPT_CHARS = 10_000
# How long a server may take to describe itself once connected.
DESCRIBE_TIMEOUT = 10.0

type PartialListener = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcription:
    """What the server heard, and the language it says the text is in (if it says)."""

    text: str
    language: str | None = None


class WyomingSTT:
    """Transcribe speech through a Wyoming ASR server (wyoming-faster-whisper and the like).

    ``model`` is sent with each request (None lets the server choose). ``transcript_timeout``
    is how long the server may stay silent once the audio has ended.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        model: str | None = None,
        connect_timeout: float = 5.0,
        write_timeout: float = 10.0,
        transcript_timeout: float = 30.0,
    ) -> None:
        """Remember where the server is and which model to ask for; connect nothing yet."""
        self.host = host
        self.port = port
        self.model = model
        self._connect_timeout = connect_timeout
        self._write_timeout = write_timeout
        self._transcript_timeout = transcript_timeout

    async def describe(self) -> AsrInfo:
        """Ask the server for its ASR programs, models and languages."""
        connection = await self._connect()
        try:
            async with asyncio.timeout(DESCRIBE_TIMEOUT):
                await connection.write(Describe().event())
                while (event := await connection.read()) is not None:
                    if event.type == "info":
                        return parse_asr_info(event.data)
            raise connection.fail("closed without an info event")
        except TimeoutError as err:
            raise SpeechError("no info event in time", host=self.host, port=self.port) from err
        finally:
            connection.close()

    async def transcribe(
        self,
        audio: AsyncIterable[bytes],
        *,
        rate: int = DEFAULT_RATE,
        width: int = DEFAULT_WIDTH,
        channels: int = DEFAULT_CHANNELS,
        language: str | None = None,
        on_partial: PartialListener | None = None,
    ) -> Transcription:
        """Send ``audio`` (PCM, ``width`` bytes a sample, interleaved) and return the transcript.

        The audio is sent as it comes. A server that streams its transcript
        (``transcript-start``/``-chunk``) has ``on_partial`` called with the text so far
        after each chunk; the final ``transcript`` is returned either way, and a server
        that answers before the audio ends stops the sending. A refused connection raises
        SpeechConnectionError; a server that closes, stalls past ``transcript_timeout``
        after the audio ended, or answers with an error raises SpeechTranscribeError.
        Cancelling closes the socket at once.
        """
        if min(rate, width, channels) < 1:
            raise ValueError(f"bad audio format: {rate} Hz, {width} bytes, {channels} channels")
        connection = await self._connect()
        receiver = asyncio.create_task(_receive(connection, on_partial, self.server))
        sender = asyncio.create_task(
            _send(connection, audio, self._request(language, rate, width, channels))
        )
        try:
            await asyncio.wait((sender, receiver), return_when=asyncio.FIRST_COMPLETED)
            if not receiver.done():
                sender.result()  # the audio's own error, or the connection's
                await asyncio.wait((receiver,), timeout=self._transcript_timeout)
            if not receiver.done():
                raise connection.fail(
                    f"no transcript within {self._transcript_timeout} s of the audio's end"
                )
            return receiver.result()
        finally:
            connection.close()
            sender.cancel()
            receiver.cancel()
            await asyncio.gather(sender, receiver, return_exceptions=True)

    @property
    def server(self) -> str:
        """Return ``host:port``, as logs name the server."""
        return f"{self.host}:{self.port}"

    def _request(self, language: str | None, rate: int, width: int, channels: int) -> _Request:
        """Return what opens a transcription: the request and the audio's format."""
        return _Request(
            transcribe=Transcribe(name=self.model, language=language),
            rate=rate,
            width=width,
            channels=channels,
        )

    async def _connect(self) -> WyomingConnection:
        """Open a connection, or raise SpeechConnectionError."""
        reader, writer = await open_wyoming(
            self.host, self.port, within=self._connect_timeout, what="STT"
        )
        return WyomingConnection(
            reader, writer, fail=self._failed, write_timeout=self._write_timeout
        )

    def _failed(self, message: str) -> SpeechTranscribeError:
        """Return the error for this server."""
        return SpeechTranscribeError(message, host=self.host, port=self.port)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Request:
    """The transcribe request and the format of the audio that follows it."""

    transcribe: Transcribe
    rate: int
    width: int
    channels: int


async def _send(
    connection: WyomingConnection, audio: AsyncIterable[bytes], request: _Request
) -> None:
    """Send the request, the audio in whole frames as it comes, then the audio's end."""
    fmt = {"rate": request.rate, "width": request.width, "channels": request.channels}
    frame = request.width * request.channels
    step = max(frame, MAX_CHUNK_BYTES - MAX_CHUNK_BYTES % frame)
    await connection.write(request.transcribe.event(), AudioStart(**fmt).event())
    held = b""  # the part of a frame the last piece ended in
    async for piece in audio:
        data = held + piece
        whole = len(data) - len(data) % frame
        held = data[whole:]
        for start in range(0, whole, step):
            chunk = AudioChunk(audio=data[start : min(start + step, whole)], **fmt)
            await connection.write(chunk.event())
    await connection.write(AudioStop().event())


async def _receive(
    connection: WyomingConnection, on_partial: PartialListener | None, server: str
) -> Transcription:
    """Read events until the transcript; tell ``on_partial`` the streamed text so far.

    A streamed transcript that reaches ``MAX_TRANSCRIPT_CHARS`` ends there: what it holds
    is the transcript, and the server (named in a warning) is not read any further.
    """
    parts: list[str] = []
    size = 0
    stopped = False
    while (event := await connection.read()) is not None:
        match event.type:
            case "transcript":
                return Transcription(
                    text=clean_text(_text(event.data.get("text")), MAX_TRANSCRIPT_CHARS),
                    language=_optional_text(event.data.get("language")),
                )
            case "transcript-start":
                parts.clear()
                size = 0
                stopped = False
            case "transcript-chunk":
                text = clean_text(_text(event.data.get("text")), MAX_TRANSCRIPT_CHARS - size)
                parts.append(text)
                size += len(text)
                if on_partial is not None and text:
                    on_partial("".join(parts))
                if size >= MAX_TRANSCRIPT_CHARS:
                    LOGGER.warning(
                        "STT %s: a transcript over %d characters, cut there",
                        server,
                        MAX_TRANSCRIPT_CHARS,
                    )
                    return Transcription(text="".join(parts))
            case "transcript-stop":
                stopped = True
            case "error":
                code, reason = event.data.get("code"), event.data.get("text")
                raise connection.fail(f"server error {code}: {reason}")
            case _:
                LOGGER.debug("Ignoring %s from the STT server", event.type)
    if stopped:  # a streamed transcript, then the connection closed: keep what was said
        return Transcription(text="".join(parts))
    raise connection.fail("closed by the server before the transcript")


def _text(value: object) -> str:
    """Return ``value`` if it is a string, else the empty string."""
    return value if isinstance(value, str) else ""


def _optional_text(value: object) -> str | None:
    """Return ``value`` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None
