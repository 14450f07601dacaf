"""A Wyoming text-to-speech client: sentences in as they come, their audio out in order.

Each sentence is one ``synthesize`` event on a connection kept for the reply: the text is
already one sentence (the output pipeline cut it), so the streaming protocol's three events
a sentence (start, chunk, stop) and the ``describe`` needed to know whether a server speaks
it would buy nothing; every Wyoming TTS server takes ``synthesize``.

A server is not trusted to end what it sends. A sentence's audio may last at most
``AUDIO_FLOOR`` seconds plus ``AUDIO_PER_CHAR`` a character, and the server may take as
long to send it (time spent waiting for the server, not for the listener); one event's
payload is checked against ``MAX_PAYLOAD`` from its header before it is read, and a read
that waits ``read_timeout`` seconds is a stall. A sentence past a bound is skipped with a
warning that names the server (what it sent before stays), and the connection is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from wyoming.event import Event
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeVoice

from ..errors import SpeechError, SpeechVoiceNotFoundError
from ..retry import RetryPolicy
from .audio_timeline import chunk_seconds
from .info import TtsInfo, parse_tts_info
from .synthesizer import AudioChunk
from .wyoming_connection import MAX_PAYLOAD, WyomingConnection, open_wyoming

LOGGER = logging.getLogger(__name__)

AUDIO_FLOOR = 10.0
AUDIO_PER_CHAR = 0.5
"""Seconds of audio a sentence may have per character: slow Chinese speech needs 0.25."""

# The server's code for "I have no such voice" (wyoming-piper's VoiceNotFoundError).
_VOICE_NOT_FOUND = "VoiceNotFoundError"


class _SentenceFailedError(Exception):
    """The connection dropped or stalled, or the server refused one sentence."""


class _SentenceOverrunError(_SentenceFailedError):
    """The server sent more audio for a sentence, or took longer, than its bound."""


SENTENCE_RETRY = RetryPolicy(
    attempts=2,
    first_delay=0.0,
    retryable=lambda err: (
        isinstance(err, _SentenceFailedError) and not isinstance(err, _SentenceOverrunError)
    ),
)
"""A sentence whose connection failed goes again at once on a new one, then is skipped; one
past its bounds is skipped at once (the server misbehaves)."""


@dataclass(slots=True)
class _Budget:
    """What one sentence may still take: seconds of audio, seconds of waiting."""

    audio: float
    wait: float

    @classmethod
    def of(cls, text: str) -> _Budget:
        """Return the budget of ``text``."""
        seconds = AUDIO_FLOOR + AUDIO_PER_CHAR * len(text)
        return cls(audio=seconds, wait=seconds)


class _Connection(WyomingConnection):
    """A connection whose reads have a deadline and whose end fails the sentence."""

    async def read(self) -> Event:
        """Return the next event, failing the sentence on a stall or a closed connection."""
        event = await super().read()
        if event is None:
            raise self.fail("connection closed by the server")
        return event


class WyomingTTS:
    """Speak sentences through a Wyoming TTS server (wyoming-piper and the like)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        voice: str | None = None,
        speaker: str | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 10.0,
        max_payload: int = MAX_PAYLOAD,
        retry: RetryPolicy = SENTENCE_RETRY,
    ) -> None:
        """Remember where the server is and how to speak; connect nothing yet."""
        self.host = host
        self.port = port
        self.voice = voice
        self.speaker = speaker
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._max_payload = max_payload
        self._retry = retry

    @property
    def server(self) -> str:
        """Return ``host:port``, as logs name the server."""
        return f"{self.host}:{self.port}"

    async def describe(self) -> TtsInfo:
        """Ask the server for its programs and voices."""
        connection = await self._connect()
        try:
            await connection.write(Describe().event())
            while True:
                event = await connection.read()
                if event.type == "info":
                    return parse_tts_info(event.data)
        except _SentenceFailedError as err:
            raise SpeechError(f"describe failed: {err}", host=self.host, port=self.port) from err
        finally:
            connection.close()

    async def synthesize(self, sentences: AsyncIterator[str]) -> AsyncGenerator[AudioChunk]:
        """Send each sentence as it arrives and yield its audio before taking the next.

        A sentence whose connection drops or stalls is sent again on a new connection
        (``SENTENCE_RETRY``: once, at once); if that fails too it is skipped, and so is one
        past its bounds (no second try: the server misbehaves). Audio already yielded for a
        sentence that is sent again is yielded again from its start (piper sends a
        sentence's audio in one burst, so a cut inside it is rare). A refused connection
        raises SpeechConnectionError, a voice the server lacks SpeechVoiceNotFoundError.
        Empty sentences are never sent.
        """
        connection: _Connection | None = None
        index = -1
        try:
            async for sentence in sentences:
                text = sentence.strip()
                if not text:
                    continue
                index += 1
                attempt = 0
                while True:
                    attempt += 1
                    if connection is None:
                        connection = await self._connect()
                    try:
                        await connection.write(self._request(text))
                        budget = _Budget.of(text)
                        while chunk := await self._next_audio(connection, index, budget):
                            yield chunk
                        break
                    except _SentenceFailedError as err:
                        connection.close()
                        connection = None
                        again = self._retry.allows(attempt, err)
                        LOGGER.warning(
                            "TTS %s sentence %d %s: %s",
                            self.server,
                            index,
                            f"attempt {attempt} failed" if again else "skipped",
                            err,
                        )
                        if not again:
                            break
                        await self._retry.wait(attempt)
        finally:
            if connection is not None:
                connection.close()

    def _request(self, text: str) -> Event:
        """Return the event that asks for one sentence."""
        voice = (
            SynthesizeVoice(name=self.voice, speaker=self.speaker)
            if self.voice is not None
            else None
        )
        return Synthesize(text=text, voice=voice).event()

    async def _next_audio(
        self, connection: _Connection, index: int, budget: _Budget
    ) -> AudioChunk | None:
        """Return the sentence's next audio chunk, or None once the server ends it."""
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            try:
                async with asyncio.timeout(budget.wait):
                    event = await connection.read()
            except TimeoutError as err:
                raise _SentenceOverrunError("the server took too long over one sentence") from err
            budget.wait -= loop.time() - began
            if event.type == "audio-chunk" and event.payload:
                chunk = AudioChunk(
                    sentence=index,
                    rate=_int(event.data.get("rate"), 22050),
                    width=_int(event.data.get("width"), 2),
                    channels=_int(event.data.get("channels"), 1),
                    audio=event.payload,
                )
                budget.audio -= chunk_seconds(chunk)
                if budget.audio < 0:
                    raise _SentenceOverrunError("more audio than one sentence can have")
                return chunk
            if event.type == "audio-stop":
                return None
            if event.type == "error":
                self._raise_refusal(event)

    def _raise_refusal(self, event: Event) -> None:
        """Raise for the server's ``error`` event: a missing voice ends it all."""
        code = event.data.get("code")
        text = event.data.get("text")
        if code == _VOICE_NOT_FOUND:
            voice = self.voice or (text if isinstance(text, str) else "(default)")
            raise SpeechVoiceNotFoundError(
                f"the server has no voice {voice!r}", host=self.host, port=self.port, voice=voice
            )
        raise _SentenceFailedError(f"server error {code}: {text}")

    async def _connect(self) -> _Connection:
        """Open a connection, or raise SpeechConnectionError."""
        reader, writer = await open_wyoming(
            self.host, self.port, within=self._connect_timeout, what="TTS"
        )
        return _Connection(
            reader,
            writer,
            fail=_SentenceFailedError,
            write_timeout=self._read_timeout,
            read_timeout=self._read_timeout,
            max_payload=self._max_payload,
            oversized=_SentenceOverrunError,
        )


def _int(value: object, default: int) -> int:
    """Return ``value`` if it is a positive int, else ``default``."""
    return value if isinstance(value, int) and value > 0 else default
