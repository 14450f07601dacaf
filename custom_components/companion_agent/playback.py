"""``PlaybackWatcher``: follow the satellite that carried a turn, to tell the turn what it hears.

A satellite that goes ``responding → idle`` has finished playing the answer: the turn is told
it was played. A satellite that goes back to ``listening`` while the turn still runs means the
person spoke over it: the turn is cancelled. One that goes ``responding → listening`` after
the turn finished is listening for a follow-up (HA's continued conversation): the answer was
played (a finished turn cannot be cut any more). At most one turn is
watched per satellite, each for a bounded time, and everything stops at unload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType

from homeassistant.components.assist_satellite.entity import AssistSatelliteState
from homeassistant.const import Platform
from homeassistant.core import CALLBACK_TYPE, Event, EventStateChangedData, HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.event import async_call_later, async_track_state_change_event

from .const import LOGGER
from .engine.turn.handle import Turn

WATCH_TIMEOUT = 300.0
BARGE_IN_REASON = "the person spoke"


@dataclass(slots=True, kw_only=True)
class _Watch:
    """One watched turn and the listeners that follow its satellite."""

    turn: Turn
    responded: bool = False
    unsubscribe: list[CALLBACK_TYPE] = field(default_factory=list)


class PlaybackWatcher:
    """Tell turns when their satellite finished playing them, or heard the person again."""

    def __init__(self, hass: HomeAssistant, timeout: float = WATCH_TIMEOUT) -> None:
        """Watch nothing yet; drop a watched turn after ``timeout`` seconds."""
        self._hass = hass
        self._timeout = timeout
        self._watches: dict[str, _Watch] = {}

    @property
    def watching(self) -> MappingProxyType[str, str]:
        """Return the trace id of the turn watched on each satellite entity."""
        return MappingProxyType({sat: w.turn.trace_id for sat, w in self._watches.items()})

    @callback
    def async_resolve(self, satellite_id: str | None, device_id: str | None) -> str | None:
        """Return the satellite entity that carried a turn, or None when there is none."""
        if satellite_id is not None:
            return satellite_id
        if device_id is None:
            return None
        for entry in er.async_entries_for_device(er.async_get(self._hass), device_id):
            if entry.domain == Platform.ASSIST_SATELLITE:
                return entry.entity_id
        return None

    @callback
    def async_watch(self, turn: Turn, satellite_id: str | None, device_id: str | None) -> None:
        """Follow the turn's satellite; a turn without one is not watched."""
        satellite = self.async_resolve(satellite_id, device_id)
        if satellite is None:
            return
        self._forget(satellite)  # the newer turn replaces the older one
        watch = _Watch(turn=turn)
        state = self._hass.states.get(satellite)
        watch.responded = state is not None and state.state == AssistSatelliteState.RESPONDING
        self._watches[satellite] = watch
        watch.unsubscribe.append(
            async_track_state_change_event(self._hass, satellite, self._on_state_change(watch))
        )
        watch.unsubscribe.append(
            async_call_later(self._hass, self._timeout, self._on_timeout(satellite, watch))
        )
        LOGGER.debug("Turn %s: watching %s", turn.trace_id, satellite)

    @callback
    def async_stop(self) -> None:
        """Stop following every satellite."""
        for satellite in list(self._watches):
            self._forget(satellite)

    def _on_state_change(self, watch: _Watch) -> Callable[[Event[EventStateChangedData]], None]:
        """Return the listener that reacts to one satellite's state for one watched turn."""

        @callback
        def _changed(event: Event[EventStateChangedData]) -> None:
            """Call played after the answer, cancel on a barge-in; then forget the turn."""
            satellite = event.data["entity_id"]
            new = event.data["new_state"]
            if self._watches.get(satellite) is not watch:
                return
            match new.state if new is not None else None:
                case AssistSatelliteState.RESPONDING:
                    watch.responded = True
                case AssistSatelliteState.IDLE:
                    if watch.responded:
                        LOGGER.debug("Turn %s: played on %s", watch.turn.trace_id, satellite)
                        watch.turn.played()
                    self._forget(satellite)
                case AssistSatelliteState.LISTENING:
                    if not watch.turn.result.done():
                        LOGGER.debug("Turn %s: barge-in on %s", watch.turn.trace_id, satellite)
                        watch.turn.cancel(BARGE_IN_REASON)
                    elif watch.responded:
                        # A finished turn whose answer was playing: the satellite listens for a
                        # follow-up (continued conversation), which ends the answer's audio.
                        watch.turn.played()
                    self._forget(satellite)
                case None:
                    self._forget(satellite)  # the satellite was removed
                case _:
                    pass

        return _changed

    def _on_timeout(self, satellite: str, watch: _Watch) -> Callable[[object], None]:
        """Return the callback that drops a turn watched for too long."""

        @callback
        def _expired(_now: object) -> None:
            """Forget the turn, if it is still the one watched."""
            if self._watches.get(satellite) is watch:
                watch.unsubscribe.pop()  # the timer has fired; only the state listener is left
                self._forget(satellite)

        return _expired

    def _forget(self, satellite: str) -> None:
        """Stop watching the satellite's turn, if any (it is not cancelled)."""
        watch = self._watches.pop(satellite, None)
        if watch is None:
            return
        for unsubscribe in watch.unsubscribe:
            unsubscribe()
        watch.unsubscribe.clear()
