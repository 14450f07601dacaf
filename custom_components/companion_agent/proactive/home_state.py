"""The home as proactive plugins see it: who is home (``person`` / ``zone.home``), state changes.

``HassPresence`` answers the engine's ``PresenceProbe`` from HA's states: someone is home when
``zone.home`` counts a person (or, without it, a ``person`` entity is ``home``); the home is
asleep while an optional entity (a helper such as ``input_boolean.sleeping``) is ``on``.
``HassStateWatcher`` answers ``StateWatcher`` with HA's state-change tracking.
"""

from __future__ import annotations

from collections.abc import Sequence

from homeassistant.const import STATE_HOME, STATE_ON
from homeassistant.core import CALLBACK_TYPE, Event, EventStateChangedData, HomeAssistant, callback
from homeassistant.helpers.event import async_track_state_change_event

from ..engine.proactive import Presence, StateChange, StateListener

HOME_ZONE = "zone.home"
PERSON_DOMAIN = "person"


class HassPresence:
    """Tell the engine whether anyone is home and awake, from HA's states."""

    def __init__(self, hass: HomeAssistant, asleep_entity: str | None = None) -> None:
        """Read presence from ``hass``; ``asleep_entity`` ``on`` means the home sleeps."""
        self._hass = hass
        self._asleep_entity = asleep_entity or None

    def presence(self) -> Presence:
        """Return who is home now."""
        states = self._hass.states
        zone = states.get(HOME_ZONE)
        if zone is not None and zone.state.isdigit():
            someone = int(zone.state) > 0
        else:
            someone = any(s.state == STATE_HOME for s in states.async_all(PERSON_DOMAIN))
        asleep = self._asleep_entity is not None and (
            (state := states.get(self._asleep_entity)) is not None and state.state == STATE_ON
        )
        return Presence(someone_home=someone, asleep=asleep)


class HassStateWatcher:
    """Report state changes of named HA entities to an engine plugin."""

    def __init__(self, hass: HomeAssistant) -> None:
        """Follow states in ``hass``."""
        self._hass = hass

    def watch_states(self, entity_ids: Sequence[str], listener: StateListener) -> CALLBACK_TYPE:
        """Call ``listener`` on each change of the entities; return how to stop."""

        @callback
        def _changed(event: Event[EventStateChangedData]) -> None:
            """Pass one change on as the engine's ``StateChange``."""
            old, new = event.data["old_state"], event.data["new_state"]
            listener(
                StateChange(
                    entity_id=event.data["entity_id"],
                    old_state=old.state if old is not None else None,
                    new_state=new.state if new is not None else None,
                    name=new.name if new is not None else "",
                )
            )

        return async_track_state_change_event(self._hass, list(entity_ids), _changed)
