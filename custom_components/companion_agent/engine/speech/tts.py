"""A Wyoming text-to-speech client: sentences in as they come, their audio out in order."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator

from wyoming.event import Event
from wyoming.info import Describe
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from ..errors import SpeechError, SpeechVoiceNotFoundError
from ..retry import RetryPolicy
from .info import TtsInfo, parse_tts_info
from .synthesizer import AudioChunk
from .wyoming_connection import WyomingConnection, open_wyoming

LOGGER = logging.getLogger(__name__)

# The server's code for "I have no such voice" (wyoming-piper's VoiceNotFoundError).
_VOICE_NOT_FOUND = "VoiceNotFoundError"


class _SentenceFailedError(Exception):
    """The connection dropped or stalled, or the server refused one sentence."""


SENTENCE_RETRY = RetryPolicy(
    attempts=2, first_delay=0.0, retryable=lambda err: isinstance(err, _SentenceFailedError)
)
"""A sentence whose connection failed goes again at once on a new one, then is skipped."""


class _Connection(WyomingConnection):
    """A connection whose reads have a deadline and whose end fails the sentence."""

    async def read(self) -> Event:
        """Return the next event, failing the sentence on a stall or a closed connection."""
        event = await super().read()
        if event is None:
            raise self.fail("connection closed by the server")
        return event


class WyomingTTS:
    """Speak sentences through a Wyoming TTS server (wyoming-piper and the like).

    ``streaming`` None follows what the server advertises; True or False forces
    synthesize-start/chunk/stop or one ``synthesize`` per sentence.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        voice: str | None = None,
        speaker: str | None = None,
        streaming: bool | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 10.0,
        retry: RetryPolicy = SENTENCE_RETRY,
    ) -> None:
        """Remember where the server is and how to speak; connect nothing yet."""
        self.host = host
        self.port = port
        self.voice = voice
        self.speaker = speaker
        self._streaming = streaming
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._retry = retry

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
        (``SENTENCE_RETRY``: once, at once); if that fails too it is skipped. Audio already
        yielded for a sentence that is then sent again is yielded again from its start
        (piper sends a sentence's audio in one burst, so a cut inside it is rare). A
        refused connection raises SpeechConnectionError, a voice the server lacks
        SpeechVoiceNotFoundError. Empty sentences are never sent.
        """
        streaming = self._streaming
        if streaming is None:
            streaming = (await self.describe()).supports_streaming
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
                        await connection.write(*self._request(text, streaming=streaming))
                        while (
                            chunk := await self._next_audio(connection, index, streaming)
                        ) is not None:
                            yield chunk
                        break
                    except _SentenceFailedError as err:
                        connection.close()
                        connection = None
                        LOGGER.warning(
                            "TTS %s:%s sentence %d attempt %d failed: %s",
                            self.host,
                            self.port,
                            index,
                            attempt,
                            err,
                        )
                        if not self._retry.allows(attempt, err):
                            break
                        await self._retry.wait(attempt)
        finally:
            if connection is not None:
                connection.close()

    def _request(self, text: str, *, streaming: bool) -> list[Event]:
        """Return the events that ask for one sentence."""
        voice = (
            SynthesizeVoice(name=self.voice, speaker=self.speaker)
            if self.voice is not None
            else None
        )
        if not streaming:
            return [Synthesize(text=text, voice=voice).event()]
        # One stream per sentence: wyoming-piper holds a streamed sentence back until the
        # next one begins, so only synthesize-stop gets its audio out at once.
        return [
            SynthesizeStart(voice=voice).event(),
            SynthesizeChunk(text=text).event(),
            SynthesizeStop().event(),
        ]

    async def _next_audio(
        self, connection: _Connection, index: int, streaming: bool
    ) -> AudioChunk | None:
        """Return the sentence's next audio chunk, or None once the server ends it."""
        end = "synthesize-stopped" if streaming else "audio-stop"
        while True:
            event = await connection.read()
            if event.type == "audio-chunk" and event.payload:
                return AudioChunk(
                    sentence=index,
                    rate=_int(event.data.get("rate"), 22050),
                    width=_int(event.data.get("width"), 2),
                    channels=_int(event.data.get("channels"), 1),
                    audio=event.payload,
                )
            if event.type == end:
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
        )


def _int(value: object, default: int) -> int:
    """Return ``value`` if it is a positive int, else ``default``."""
    return value if isinstance(value, int) and value > 0 else default
