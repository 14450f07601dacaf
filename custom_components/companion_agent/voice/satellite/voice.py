"""``SatelliteVoice``: what plays on a satellite's speaker, one answer or announcement at a time.

Each playback is a ``SatelliteSpeaker`` in a task of its own, from a source that gives
the audio's format and its PCM as it comes; the PCM is read as fast as it is made
(``ReadAhead``), so how much audio exists is known at any moment, not only what was sent.
A new playback stops the one before; ``stop`` stops it now and says how much of it the
person heard. A playback is over once the
satellite says ``played`` (a satellite that has said it once is waited for each time) or,
from one that never does, once its audio has had time to play out. The speaker's format is
the one the satellite asked for (``snd_format``), else each audio's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant

from ...engine.speech import AudioProgress
from ...engine.speech.satellite import PcmFormat, ReadAhead, SatelliteSpeaker, Send

MAX_AHEAD_SECONDS = 600.0
"""How much audio a playback takes in ahead of the speaker (its source makes it faster)."""

type AudioSource = Callable[[], Awaitable[tuple[PcmFormat, AsyncIterator[bytes]]]]
"""Open the audio: return its format and its PCM as it comes."""


@dataclass(slots=True, kw_only=True)
class Playback:
    """One audio on its way to the speaker, and the satellite's word that it played."""

    speaker: SatelliteSpeaker
    played: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[bool] | None = None
    fmt: PcmFormat | None = None
    ahead: ReadAhead | None = None

    def progress(self) -> AudioProgress:
        """Return how far the audio got: what the person has heard by now, of how much."""
        ahead = self.ahead
        made = None if ahead is None or self.fmt is None else self.fmt.seconds(ahead.produced)
        return AudioProgress(
            played=self.speaker.played_seconds(),
            length=made,
            complete=ahead is not None and ahead.done and self.speaker.complete,
        )


class SatelliteVoice:
    """The satellite's speaker: what plays, how far it got, when it is over."""

    def __init__(self, hass: HomeAssistant, entry: ConfigEntry, send: Send) -> None:
        """Send audio through ``send``."""
        self._hass = hass
        self._entry = entry
        self._send = send
        self._current: Playback | None = None
        self.says_played = False
        self.speaker_format: PcmFormat | None = None

    @property
    def playing(self) -> bool:
        """Say whether something is playing (or still being played out) now."""
        return self._current is not None

    @property
    def first_audio_at(self) -> float | None:
        """Return when the current playback's first audio left for the satellite."""
        return None if self._current is None else self._current.speaker.first_audio_at

    def play(self, source: AudioSource, name: str) -> Playback:
        """Play ``source``, stopping what plays; its task is True once it has been heard."""
        self.stop()
        playback = Playback(speaker=SatelliteSpeaker(self._send, target=self.speaker_format))
        playback.task = self._entry.async_create_background_task(
            self._hass, self._play(playback, source), f"satellite plays {name}"
        )
        self._current = playback
        return playback

    def stop(self) -> AudioProgress | None:
        """Stop what plays at once; return how much of it was heard (None: nothing played)."""
        playback, self._current = self._current, None
        if playback is None:
            return None
        assert playback.task is not None
        playback.task.cancel()
        return playback.progress()

    def satellite_played(self) -> None:
        """Take the satellite's ``played``: the audio it was sent has played."""
        self.says_played = True
        if self._current is not None and self._current.speaker.complete:
            self._current.played.set()

    async def _play(self, playback: Playback, source: AudioSource) -> bool:
        """Open the audio, send it at real time, wait until it was heard."""
        try:
            fmt, pcm = await source()
            playback.fmt = fmt
            playback.ahead = ReadAhead(pcm, fmt.bytes_for(MAX_AHEAD_SECONDS))
            await playback.speaker.play(fmt, playback.ahead.pieces())
            await playback.speaker.wait_played(playback.played if self.says_played else None)
            return True
        finally:
            if self._current is playback:
                self._current = None


async def async_heard(playback: Playback) -> bool:
    """Wait for a playback; return False if it was stopped (its error is raised as is)."""
    task = playback.task
    assert task is not None
    await asyncio.wait((task,))
    return not task.cancelled() and task.result()
