"""Play audio on a satellite's speaker at real time, so that what was sent is what was heard.

A satellite plays what it is sent as it comes and, on a barge-in, cannot be told to drop
what it already holds (wyoming-satellite plays it; 1.0.0 never says ``played`` either).
So the speaker sends at most ``lead`` seconds ahead of the satellite's playback: the first
chunks go at once (first audio is never held back), the rest as the audio before them
plays. It keeps the satellite's clock — a chunk starts playing when the audio before it
has played, or when it arrives after a gap — so ``played_seconds`` is what the person has
heard at any moment, within ``lead``, and ``ends_at`` is when the last audio sent ends.

Stopping is cancelling ``play``: nothing more is sent, and ``audio-stop`` closes the audio
at once. ``first_audio_at`` is when the answer's first PCM left for the satellite: the
moment a benchmark of first audio times.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, Awaitable, Callable
from contextlib import suppress

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event

from ...errors import SatelliteError
from .audio import PcmConverter, PcmFormat, PcmFramer

type Send = Callable[[Event], Awaitable[None]]
"""Send one event to the satellite; raise SatelliteError if it cannot be sent."""
type Clock = Callable[[], float]

LEAD_SECONDS = 0.5
CHUNK_SECONDS = 0.05
PLAYED_MARGIN = 0.5
"""How long after its audio's end a satellite that says nothing is taken to have played it."""
PLAYED_GRACE = 2.0
"""How much longer than the audio a satellite that says ``played`` may take to say it."""


class SatelliteSpeaker:
    """One stream of audio to a satellite: ``audio-start``, chunks paced to real time, stop."""

    def __init__(
        self,
        send: Send,
        *,
        target: PcmFormat | None = None,
        lead: float = LEAD_SECONDS,
        chunk_seconds: float = CHUNK_SECONDS,
        clock: Clock = time.monotonic,
    ) -> None:
        """Send through ``send`` in ``target`` format (None: the audio's own)."""
        self._send = send
        self._target = target
        self._lead = lead
        self._chunk_seconds = chunk_seconds
        self._clock = clock
        self._open = False
        self.sent_seconds = 0.0
        self.first_audio_at: float | None = None
        self.ends_at: float | None = None
        """When (``clock()``) the satellite finishes playing what it was sent."""
        self.complete = False
        """Whether all of the audio was sent (False while it plays, or if it was stopped)."""

    def played_seconds(self) -> float:
        """Return how much of the audio sent the satellite has played by now."""
        if self.ends_at is None:
            return 0.0
        return max(0.0, self.sent_seconds - max(0.0, self.ends_at - self._clock()))

    async def play(self, fmt: PcmFormat, pcm: AsyncIterable[bytes]) -> None:
        """Send ``pcm`` (of format ``fmt``) to the satellite at real time, then ``audio-stop``.

        Cancelling it stops the audio at once (``audio-stop`` is still sent, if it can be).
        Raise SatelliteError if the satellite does not take it.
        """
        target = self._target or fmt
        converter = PcmConverter(fmt, target)
        framer = PcmFramer(fmt, fmt.bytes_for(self._chunk_seconds))
        try:
            async for piece in pcm:
                for chunk in framer.push(piece):
                    await self._send_audio(converter.convert(chunk), target)
            if rest := framer.flush():
                await self._send_audio(converter.convert(rest), target)
        except BaseException:
            if self._open:
                with suppress(SatelliteError):
                    await self._stop_audio()
            raise
        if self._open:
            await self._stop_audio()
        self.complete = True

    async def wait_played(self, played: asyncio.Event | None = None) -> bool:
        """Wait until the satellite has played what it was sent; return whether it said so.

        ``played`` is set when the satellite says ``played``: waited for (at most the
        audio's rest plus ``PLAYED_GRACE``) when given; else the audio's end plus
        ``PLAYED_MARGIN`` is taken as played.
        """
        rest = 0.0 if self.ends_at is None else max(0.0, self.ends_at - self._clock())
        if played is None:
            await asyncio.sleep(rest + PLAYED_MARGIN)
            return False
        try:
            async with asyncio.timeout(rest + PLAYED_GRACE):
                await played.wait()
        except TimeoutError:
            return False
        return True

    async def _send_audio(self, audio: bytes, fmt: PcmFormat) -> None:
        """Send one chunk once the satellite holds at most ``lead`` seconds of audio."""
        if not audio:
            return
        if not self._open:
            await self._send(
                AudioStart(rate=fmt.rate, width=fmt.width, channels=fmt.channels).event()
            )
            self._open = True
        if self.ends_at is not None and (ahead := self.ends_at - self._clock()) > self._lead:
            await asyncio.sleep(ahead - self._lead)
        now = self._clock()
        if self.first_audio_at is None:
            self.first_audio_at = now
        chunk = AudioChunk(rate=fmt.rate, width=fmt.width, channels=fmt.channels, audio=audio)
        await self._send(chunk.event())
        seconds = fmt.seconds(len(audio))
        self.ends_at = max(self.ends_at or now, now) + seconds
        self.sent_seconds += seconds

    async def _stop_audio(self) -> None:
        """Close the audio: ``audio-stop``."""
        self._open = False
        await self._send(AudioStop().event())
