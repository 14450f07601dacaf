"""``PlaybackWatcher``: follow the device that carried a turn, to tell the turn what it hears.

Satellites: ``responding → idle`` means the answer has played. Back to ``listening`` while
the turn still runs means the person spoke over it: the turn is cancelled. ``listening``
after the turn finished is a follow-up (HA's continued conversation) once the answer had
time to play, else the person spoke over its audio, and the stored turn becomes
``interrupted`` after the sentences that could have been heard (``spoken_over.heard_by``;
``async_report_duration`` gives the exact length of another TTS's WAV). A device that
knows the seconds played says so (``async_cut``).

Media players (proactive speech): leaving ``playing`` means played; for players that never
say so, a timer: the audio's length plus ``FALLBACK_MARGIN`` from when the watch began.

One turn is watched per device; a new turn on a device whose turn still runs cancels that
one. ``played`` is called at most once per turn, never for a turn that did not speak. A
watch's ``on_heard`` is called once with the turn's result: as played, or ``interrupted``
with only what could have been heard. Each watch has a bounded life; unload stops all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from homeassistant.components.assist_satellite.entity import AssistSatelliteState
from homeassistant.components.media_player.const import MediaPlayerState
from homeassistant.core import (
    CALLBACK_TYPE,
    Event,
    EventStateChangedData,
    HomeAssistant,
    State,
    callback,
)
from homeassistant.helpers.event import async_call_later, async_track_state_change_event

from ..const import LOGGER
from ..engine.speech import AudioProgress, SpeechTurns, spoken_seconds
from ..engine.turn.handle import Turn
from .playback_cut import HeardCallback, cut_turn, keep_heard, tell_heard
from .speaking import satellite_of
from .spoken_over import BARGE_IN_REASON, heard_by

WATCH_TIMEOUT = 300.0
NEWER_TURN_REASON = "a newer turn started on the device"
FALLBACK_MARGIN = 3.0


@dataclass(slots=True, kw_only=True)
class _Watch:
    """One watched turn, its device, and the listeners that follow it."""

    turn: Turn
    kind: Literal["satellite", "media_player"]
    on_heard: HeardCallback | None = None
    responded_at: float | None = None
    """When the device began responding (playing); None: not yet."""
    started: float = 0.0
    duration: float | None = None
    unsubscribe: list[CALLBACK_TYPE] = field(default_factory=list)
    fallback: CALLBACK_TYPE | None = None


class PlaybackWatcher:
    """Tell turns when their device finished playing them, or heard the person again."""

    def __init__(
        self, hass: HomeAssistant, speech: SpeechTurns, timeout: float = WATCH_TIMEOUT
    ) -> None:
        """Watch nothing yet; drop a watched turn after ``timeout`` seconds.

        ``speech`` holds the turns' audio timelines, where our voice spoke them.
        """
        self._hass = hass
        self._speech = speech
        self._timeout = timeout
        self._watches: dict[str, _Watch] = {}

    @property
    def watching(self) -> MappingProxyType[str, str]:
        """Return the trace id of the turn watched on each device entity."""
        return MappingProxyType({sat: w.turn.trace_id for sat, w in self._watches.items()})

    @callback
    def async_watch(
        self,
        turn: Turn,
        satellite_id: str | None,
        device_id: str | None,
        *,
        on_heard: HeardCallback | None = None,
    ) -> None:
        """Follow the turn's satellite (or its device's); a turn without one is not watched."""
        satellite = satellite_of(self._hass, satellite_id, device_id)
        if satellite is None:
            return
        watch = self._start(satellite, _Watch(turn=turn, kind="satellite", on_heard=on_heard))
        state = self._hass.states.get(satellite)
        if state is not None and state.state == AssistSatelliteState.RESPONDING:
            watch.responded_at = state.last_changed_timestamp

    @callback
    def async_watch_media_player(
        self, turn: Turn, entity_id: str, *, on_heard: HeardCallback | None = None
    ) -> None:
        """Follow the media player that plays the turn; fall back on its estimated length."""
        watch = self._start(entity_id, _Watch(turn=turn, kind="media_player", on_heard=on_heard))
        turn.on_finished(lambda _result: self._arm_fallback(entity_id, watch))

    @callback
    def async_played(self, turn: Turn) -> None:
        """Say the device reported the end of the turn's audio some other way (a service)."""
        for device, watch in list(self._watches.items()):
            if watch.turn is turn:
                self._play(device, watch)

    @callback
    def async_report_duration(self, trace_id: str, seconds: float) -> None:
        """Take the exact length of a turn's audio (from a TTS that knows it)."""
        if not math.isfinite(seconds):
            return
        for device, watch in self._watches.items():
            if watch.turn.trace_id == trace_id:
                watch.duration = max(0.0, seconds)
                if watch.fallback is not None:
                    self._arm_fallback(device, watch)

    @callback
    def async_forget(self, turn: Turn) -> None:
        """Stop watching ``turn`` without calling it played (its audio never started)."""
        for device, watch in list(self._watches.items()):
            if watch.turn is turn:
                self._forget(device)

    @callback
    def async_stop(self) -> None:
        """Stop following every device."""
        for device in list(self._watches):
            self._forget(device)

    def _start(self, device: str, watch: _Watch) -> _Watch:
        """Replace the device's watch (cancelling its turn if it still runs); follow it."""
        older = self._watches.get(device)
        if older is not None and older.turn.finished is None:
            LOGGER.debug("Turn %s: replaced on %s", older.turn.trace_id, device)
            older.turn.cancel(NEWER_TURN_REASON)
        self._forget(device)
        watch.started = self._hass.loop.time()
        self._watches[device] = watch
        watch.unsubscribe.append(
            async_track_state_change_event(self._hass, device, self._on_state_change(watch))
        )
        watch.unsubscribe.append(
            async_call_later(self._hass, self._timeout, self._on_timeout(device, watch))
        )
        LOGGER.debug("Turn %s: watching %s", watch.turn.trace_id, device)
        return watch

    def _on_state_change(self, watch: _Watch) -> Callable[[Event[EventStateChangedData]], None]:
        """Return the listener that reacts to one device's state for one watched turn."""

        @callback
        def _changed(event: Event[EventStateChangedData]) -> None:
            """Call played after the answer, cancel on a barge-in; then forget the turn."""
            device = event.data["entity_id"]
            new = event.data["new_state"]
            if self._watches.get(device) is not watch:
                return
            if new is None:
                self._forget(device)  # the device was removed
            elif watch.kind == "media_player":
                self._media_player_changed(device, watch, new)
            else:
                self._satellite_changed(device, watch, new)

        return _changed

    def _satellite_changed(self, satellite: str, watch: _Watch, new: State) -> None:
        """Follow a satellite: responding, then idle (played) or listening (barge-in)."""
        match new.state:
            case AssistSatelliteState.RESPONDING:
                if watch.responded_at is None:
                    watch.responded_at = new.last_changed_timestamp
            case AssistSatelliteState.IDLE:
                if watch.responded_at is not None:
                    self._play(satellite, watch)
                self._forget(satellite)
            case AssistSatelliteState.LISTENING:
                turn = watch.turn
                if turn.finished is None:
                    LOGGER.debug("Turn %s: barge-in on %s", turn.trace_id, satellite)
                    turn.cancel(BARGE_IN_REASON)
                    self._tell(watch)  # its result says interrupted, with what was said
                elif watch.responded_at is not None:
                    self._listened(satellite, watch, new.last_changed_timestamp)
                self._forget(satellite)
            case _:
                pass

    @callback
    def async_cut(self, device: str, progress: AudioProgress, *, failed: bool = False) -> None:
        """Keep what a device says was heard of its answer (``playback_cut.cut_turn``)."""
        if (watch := self._watches.get(device)) is not None:
            self._forget(device)
            cut_turn(watch.turn, progress, watch.on_heard, reason=BARGE_IN_REASON, failed=failed)

    def _listened(self, satellite: str, watch: _Watch, at: float) -> None:
        """Take a finished turn's satellite listening again: a follow-up, or a barge-in."""
        turn = watch.turn
        result = turn.finished
        assert result is not None  # only a finished turn is listened after
        heard = self._heard(watch, at)
        if heard is None:
            self._play(satellite, watch)  # the satellite listens for a follow-up
            return
        LOGGER.debug("Turn %s: spoken over on %s (%d heard)", turn.trace_id, satellite, heard)
        self._forget(satellite)
        on_heard, watch.on_heard = watch.on_heard, None
        keep_heard(turn, heard, result, on_heard)

    def _heard(self, watch: _Watch, at: float) -> int | None:
        """Return how many sentences the finished turn had begun by ``at``; None: all played."""
        turn = watch.turn
        begun = [t for t in (turn.first_spoken_at, watch.responded_at) if t is not None]
        speech = self._speech.get(turn.trace_id)
        return heard_by(turn, speech, at, begun=min(begun, default=None), length=watch.duration)

    def _media_player_changed(self, player: str, watch: _Watch, new: State) -> None:
        """Follow a media player: playing, then anything else once the turn is done."""
        if new.state == MediaPlayerState.PLAYING:
            watch.responded_at = new.last_changed_timestamp
        elif watch.responded_at is not None and watch.turn.finished is not None:
            self._play(player, watch)
        # leaving ``playing`` while the text still streams is a gap between sentences

    def _arm_fallback(self, player: str, watch: _Watch) -> None:
        """Once the turn is done, call it played after its estimated (or reported) length."""
        result = watch.turn.finished
        if self._watches.get(player) is not watch or result is None:
            return
        if not result.spoken:
            self._forget(player)  # nothing was said: nothing will be played
            return
        if watch.fallback is not None:
            watch.fallback()
        length = watch.duration if watch.duration is not None else spoken_seconds(result.spoken)
        delay = watch.started + length + FALLBACK_MARGIN - self._hass.loop.time()

        @callback
        def _elapsed(_now: object) -> None:
            """Call the turn played: its audio must be over by now."""
            watch.fallback = None
            if self._watches.get(player) is watch:
                LOGGER.debug("Turn %s: played on %s (by its length)", watch.turn.trace_id, player)
                self._play(player, watch)

        watch.fallback = async_call_later(self._hass, max(0.0, delay), _elapsed)

    def _play(self, device: str, watch: _Watch) -> None:
        """Tell the turn (and the caller) its audio has played, once; then forget it."""
        self._forget(device)
        LOGGER.debug("Turn %s: played on %s", watch.turn.trace_id, device)
        watch.turn.played()
        self._tell(watch)

    @staticmethod
    def _tell(watch: _Watch) -> None:
        """Call the watch's ``on_heard`` once with the turn's result, when it has one."""
        on_heard, watch.on_heard = watch.on_heard, None
        tell_heard(watch.turn, on_heard)

    def _on_timeout(self, device: str, watch: _Watch) -> Callable[[object], None]:
        """Return the callback that drops a turn watched for too long."""

        @callback
        def _expired(_now: object) -> None:
            """Forget the turn, if it is still the one watched."""
            if self._watches.get(device) is watch:
                watch.unsubscribe.pop()  # the timer has fired; only the state listener is left
                self._forget(device)

        return _expired

    def _forget(self, device: str) -> None:
        """Stop watching the device's turn, if any (it is not cancelled)."""
        watch = self._watches.pop(device, None)
        if watch is None:
            return
        for unsubscribe in watch.unsubscribe:
            unsubscribe()
        watch.unsubscribe.clear()
        if watch.fallback is not None:
            watch.fallback()
            watch.fallback = None
