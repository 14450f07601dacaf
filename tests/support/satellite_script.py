"""A scripted Wyoming satellite on 127.0.0.1: a real socket a test drives event by event.

It stands in for what wyoming-satellite 1.0.0 does not do (answer ``ping``, say
``played``, name its speaker's format, misbehave) and for exact timing: the test sends
``run-pipeline`` and audio when it wants, and sees every event our entity sends, in order.
It answers ``describe`` with ``info`` (a satellite's, or another server's).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from wyoming.audio import AudioChunk, AudioStop
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.info import Attribution, Info, Satellite
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.snd import Played

from tests.support.loopback_server import LoopbackServer

SATELLITE_INFO = Info(
    satellite=Satellite(
        name="Scripted satellite",
        attribution=Attribution(name="", url=""),
        installed=True,
        description="A test satellite",
        version="1.0.0",
        area="Hall",
    )
)
TIMEOUT = 20.0


@dataclass
class Received:
    """Everything our entity sent, and when each event came (loop time)."""

    events: list[Event] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def types(self) -> list[str]:
        """Return the types of the events, in order."""
        return [event.type for event in self.events]

    def audio(self) -> bytes:
        """Return the PCM of every audio chunk received."""
        return b"".join(e.payload or b"" for e in self.events if e.type == "audio-chunk")


class ScriptedSatellite(LoopbackServer):
    """Serve connections as a satellite would; the test says what the satellite does."""

    def __init__(self, *, info: Info = SATELLITE_INFO, says_played: bool = False) -> None:
        """Describe itself as ``info``; say ``played`` after each audio when ``says_played``."""
        self.info = info
        self.says_played = says_played
        self.answers_ping = False
        self.received = Received()
        self.connections = 0
        self._writer: asyncio.StreamWriter | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Record each event; answer describe and (if asked to) ping; say played."""
        loop = asyncio.get_running_loop()
        self.connections += 1
        self._writer = writer
        try:
            while (event := await async_read_event(reader)) is not None:
                self.received.events.append(event)
                self.received.times.append(loop.time())
                self.received.changed.set()
                if event.type == "describe":
                    await async_write_event(self.info.event(), writer)
                elif event.type == "ping" and self.answers_ping:
                    await async_write_event(Event("pong", dict(event.data)), writer)
                elif event.type == "audio-stop" and self.says_played:
                    await async_write_event(Played().event(), writer)
        finally:
            if self._writer is writer:
                self._writer = None

    async def wait_connected(self, times: int = 1) -> None:
        """Wait until our entity has connected (and asked to run) ``times`` times."""
        await self.wait_event("run-satellite", times)

    async def wait_event(self, kind: str, count: int = 1) -> Event:
        """Wait until ``count`` events of ``kind`` have come; return the last of them."""
        async with asyncio.timeout(TIMEOUT):
            while True:
                found = [e for e in self.received.events if e.type == kind]
                if len(found) >= count:
                    return found[count - 1]
                self.received.changed.clear()
                await self.received.changed.wait()

    async def send(self, *events: Event) -> None:
        """Send ``events`` to our entity on the open connection."""
        assert self._writer is not None, "no connection"
        for event in events:
            await async_write_event(event, self._writer)

    async def send_raw(self, data: bytes) -> None:
        """Send bytes that may be no Wyoming at all."""
        assert self._writer is not None, "no connection"
        self._writer.write(data)
        await self._writer.drain()

    def drop(self) -> None:
        """Close the open connection at once, as a satellite that lost power."""
        if self._writer is not None:
            self._writer.transport.abort()

    async def stream_microphone(self) -> None:
        """Stream silence until cancelled, as a satellite that streams; end each run's audio.

        Each ``transcribe`` (a run listens) is answered with ``audio-stop`` 0.3 s later.
        """
        chunk = AudioChunk(rate=16000, width=2, channels=1, audio=bytes(1024)).event()
        transcribes = self.received.types().count("transcribe")
        while True:
            await self.send(chunk)
            asked = self.received.types().count("transcribe")
            if asked > transcribes:
                transcribes = asked
                await asyncio.sleep(0.3)
                await self.send(AudioStop().event())
            await asyncio.sleep(0.03)

    async def ask(
        self, pcm: bytes, *, end: PipelineStage = PipelineStage.TTS, **extra: object
    ) -> None:
        """Run a pipeline from speech to text on ``pcm`` (16 kHz, 16-bit mono), then stop it."""
        run = RunPipeline(start_stage=PipelineStage.ASR, end_stage=end).event()
        run.data.update(extra)
        await self.send(run)
        for start in range(0, len(pcm), 2048):
            chunk = AudioChunk(rate=16000, width=2, channels=1, audio=pcm[start : start + 2048])
            await self.send(chunk.event())
        await self.send(AudioStop().event())
