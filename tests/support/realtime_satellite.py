"""A Wyoming satellite on 127.0.0.1 that speaks and plays at real time, for HA's own satellite.

HA's Wyoming satellite entity connects to it, as to any satellite. The real
wyoming-satellite on PyPI (1.0.0, wyoming 1.4.1) answers no ``ping``, and HA 2026.2.3 drops
a satellite that is silent for 5 s while it waits for its wake word; this one, written on
the ``wyoming`` library for these tests, answers pings, and on cue (``ask``) sends
``run-pipeline`` (speech to text through speech) with the words to hear at real time, as a
satellite does after its wake word, then silence until HA says what it heard. What HA sends
its speaker is kept with the time it arrived (``utterances``), and ``played`` is sent once
the audio could have played out at real time (from its first chunk), as a real speaker's
end would be reported. Asking again while an answer plays is a barge-in, as when the wake
word is heard over the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.info import Attribution, Info, Satellite
from wyoming.ping import Pong
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.snd import Played

from tests.support.loopback_server import LoopbackServer

MIC_RATE = 16000
MIC_CHUNK = 1024  # samples, 64 ms
SILENCE = bytes(MIC_CHUNK * 2)
LISTEN_TIMEOUT = 30.0


@dataclass
class Utterance:
    """One audio HA sent to the speaker: its format, its PCM, when its first chunk came."""

    rate: int
    width: int
    channels: int
    audio: bytearray = field(default_factory=bytearray)
    first_at: float | None = None
    """When (loop time) its first audio arrived: when the first audio left HA."""
    arrivals: list[tuple[float, int]] = field(default_factory=list)
    """When (loop time) each chunk arrived, and its size in bytes."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def seconds(self) -> float:
        """Return how long it plays."""
        return len(self.audio) / (self.rate * self.width * self.channels)


class RealTimeSatellite(LoopbackServer):
    """Serve HA's Wyoming satellite entity; speak on cue; keep what its speaker is sent."""

    def __init__(self, name: str = "Hall satellite", *, real_time: bool = True) -> None:
        """Prepare a satellite called ``name``; nothing is connected yet.

        ``real_time`` False: say ``played`` as soon as an answer's audio has come (a
        benchmark's satellite, which need not wait for the speaker).
        """
        self.name = name
        self.real_time = real_time
        self.connected = asyncio.Event()
        self.utterances: list[Utterance] = []
        self.received: list[str] = []
        self.transcripts: list[str] = []
        self.spoken = asyncio.Event()
        self._heard = asyncio.Event()
        self._writer: asyncio.StreamWriter | None = None
        self._sending: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def info(self) -> Info:
        """Return what the satellite says about itself."""
        attribution = Attribution(name="companion_agent tests", url="")
        satellite = Satellite(
            name=self.name,
            attribution=attribution,
            installed=True,
            description="A scripted test satellite",
            version="1.0",
            area="Hall",
        )
        return Info(satellite=satellite)

    async def ask(self, pcm: bytes) -> None:
        """Start a pipeline run and say ``pcm`` (16 kHz, 16-bit mono) into it at real time.

        Silence follows until HA says what it heard (or a newer question takes over).
        """
        if self._sending is not None:
            self._sending.cancel()
        self._heard.clear()
        run = RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS)
        await self._send(run.event())
        self._sending = asyncio.create_task(_quietly(self._speak(pcm)))

    async def wait_answer(self, within: float = LISTEN_TIMEOUT) -> Utterance:
        """Wait for an answer's audio to end; return it."""
        async with asyncio.timeout(within):
            while not self.utterances:
                self.spoken.clear()
                await self.spoken.wait()
            await self.utterances[-1].ended.wait()
        return self.utterances[-1]

    async def __aexit__(self, *exc_info: object) -> None:
        """Stop talking, then stop listening and close every connection."""
        for task in (*self._tasks, *([self._sending] if self._sending else [])):
            task.cancel()
        await super().__aexit__(*exc_info)

    async def _speak(self, pcm: bytes) -> None:
        """Send the words at real time, then silence until the transcript."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        step = MIC_CHUNK * 2
        pieces = [pcm[start : start + step] for start in range(0, len(pcm), step)]
        sent = 0
        async with asyncio.timeout(LISTEN_TIMEOUT):
            while not self._heard.is_set():
                piece = pieces[sent] if sent < len(pieces) else SILENCE
                chunk = AudioChunk(rate=MIC_RATE, width=2, channels=1, audio=piece)
                await self._send(chunk.event())
                sent += 1
                await asyncio.sleep(max(0.0, began + sent * MIC_CHUNK / MIC_RATE - loop.time()))

    async def _send(self, event: Event) -> None:
        """Send one event to HA."""
        assert self._writer is not None, "HA is not connected"
        await async_write_event(event, self._writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer HA's events until it hangs up."""
        self._writer = writer
        loop = asyncio.get_running_loop()
        while (event := await async_read_event(reader)) is not None:
            self.received.append(event.type)
            if writer.is_closing():  # closed while the event was read: nothing to answer
                break
            match event.type:
                case "describe":
                    await async_write_event(self.info().event(), writer)
                case "ping":
                    await async_write_event(Pong(text=event.data.get("text")).event(), writer)
                case "run-satellite":
                    self.connected.set()
                case "transcript":
                    self.transcripts.append(str(event.data.get("text", "")))
                    self._heard.set()
                case "audio-start":
                    start = AudioStart.from_event(event)
                    self.utterances.append(Utterance(start.rate, start.width, start.channels))
                case "audio-chunk" if self.utterances and event.payload:
                    utterance = self.utterances[-1]
                    if utterance.first_at is None:
                        utterance.first_at = loop.time()
                        self.spoken.set()
                    utterance.audio += event.payload
                    utterance.arrivals.append((loop.time(), len(event.payload)))
                case "audio-stop" if self.utterances:
                    AudioStop.from_event(event)
                    self._later(self._played(self.utterances[-1]))

    async def _played(self, utterance: Utterance) -> None:
        """Say ``played`` once the audio could have played out at real time."""
        loop = asyncio.get_running_loop()
        began = utterance.first_at if utterance.first_at is not None else loop.time()
        if self.real_time:
            await asyncio.sleep(max(0.0, began + utterance.seconds - loop.time()))
        utterance.ended.set()
        self.spoken.set()
        await self._send(Played().event())

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a task the satellite cancels when it stops."""
        task = asyncio.create_task(_quietly(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _quietly(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work``; HA hanging up (or the question timing out) just ends it."""
    with contextlib.suppress(ConnectionError, TimeoutError):
        await work
