"""A scripted Wyoming ASR server on 127.0.0.1: a real socket that misbehaves on cue.

It stands in for what the real wyoming-faster-whisper here cannot do (stream its
transcript, answer before the audio ends) or will not do (close mid-stream, stall, refuse).
Tests that use it for a feature rather than a fault say ``fake`` in their names.
"""

import asyncio
from dataclasses import dataclass, field
from typing import Literal

from wyoming.event import Event, async_read_event, async_write_event

from tests.support.loopback_server import LoopbackServer

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
class ScriptedAsrServer(LoopbackServer):
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
    events: list[Event] = field(default_factory=list)
    chunks: int = 0
    got_audio_stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def types(self) -> list[str]:
        """Return the types of the events received, in order."""
        return [event.type for event in self.events]

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
