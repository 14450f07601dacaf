"""A scripted Wyoming ASR server on 127.0.0.1: a real socket that misbehaves on cue.

It stands in for what the real wyoming-faster-whisper here cannot do (stream its
transcript, answer before the audio ends) or will not do (close mid-stream, stall, refuse).
Tests that use it for a feature rather than a fault say ``fake`` in their names.
"""

import asyncio
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Self

from wyoming.event import Event, async_read_event, async_write_event

type Behaviour = Literal["answer", "stream", "stream_only", "early", "close", "stall", "error"]

TEXT = "turn on the kitchen light"
INFO = {
    "asr": [
        {
            "name": "scripted",
            "supports_transcript_streaming": True,
            "models": [
                {"name": "tiny", "languages": ["en", "zh"], "installed": True},
                {"name": "small", "languages": ["en", "de"], "description": "Small"},
                {"name": "absent", "languages": ["de"], "installed": False},
                {"languages": ["fr"]},  # no name: skipped
            ],
        },
        "not a program",
    ]
}


@dataclass
class ScriptedAsrServer:
    """Answer each connection as ``behaviour`` says; record the events it received.

    ``answer``: the transcript after audio-stop. ``stream``: transcript-start, one
    transcript-chunk per word, transcript-stop, then the transcript (``stream_only``: then
    close, as a server that sends no final transcript would). ``early``: the
    transcript after ``after_chunks`` audio chunks, without waiting for audio-stop.
    ``close``: close the connection after ``after_chunks`` chunks. ``stall``: read
    everything, answer nothing. ``error``: an error event after audio-stop.
    """

    behaviour: Behaviour = "answer"
    after_chunks: int = 2
    host: str = "127.0.0.1"
    port: int = 0
    events: list[Event] = field(default_factory=list)
    chunks: int = 0
    got_audio_stop: asyncio.Event = field(default_factory=asyncio.Event)
    _open: int = 0
    _idle: asyncio.Event = field(default_factory=asyncio.Event)
    _server: asyncio.Server | None = None

    async def __aenter__(self) -> Self:
        """Start listening on an ephemeral port."""
        self._idle.set()
        self._server = await asyncio.start_server(self._handle, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop listening and close every connection."""
        assert self._server is not None
        self._server.close()
        self._server.close_clients()
        await self._server.wait_closed()

    @property
    def types(self) -> list[str]:
        """Return the types of the events received, in order."""
        return [event.type for event in self.events]

    async def wait_idle(self) -> None:
        """Wait until no client connection is open."""
        await self._idle.wait()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one connection as the behaviour says."""
        self._open += 1
        self._idle.clear()
        try:
            await self._serve(reader, writer)
        except ConnectionError:
            pass
        finally:
            writer.transport.abort()
            self._open -= 1
            if self._open == 0:
                self._idle.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read events and answer them."""
        while (event := await async_read_event(reader)) is not None:
            self.events.append(event)
            if event.type == "describe":
                await async_write_event(Event("info", INFO), writer)
            elif event.type == "audio-chunk":
                self.chunks += 1
                if self.chunks == self.after_chunks and self.behaviour == "close":
                    return
                if self.chunks == self.after_chunks and self.behaviour == "early":
                    await async_write_event(Event("transcript", {"text": TEXT}), writer)
            elif event.type == "audio-stop":
                self.got_audio_stop.set()
                await self._answer(writer)
                if self.behaviour != "stall":
                    return

    async def _answer(self, writer: asyncio.StreamWriter) -> None:
        """Send what the behaviour says comes after audio-stop."""
        match self.behaviour:
            case "answer":
                await async_write_event(
                    Event("transcript", {"text": TEXT, "language": "en"}), writer
                )
            case "stream" | "stream_only":
                await async_write_event(Event("transcript-start", {"language": "en"}), writer)
                for index, word in enumerate(TEXT.split()):
                    piece = word if index == 0 else f" {word}"
                    await async_write_event(Event("transcript-chunk", {"text": piece}), writer)
                await async_write_event(Event("transcript-stop"), writer)
                if self.behaviour == "stream":
                    await async_write_event(Event("transcript", {"text": TEXT}), writer)
            case "error":
                await async_write_event(
                    Event("error", {"code": "ModelNotLoaded", "text": "no model"}), writer
                )
            case _:
                pass
