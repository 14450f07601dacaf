"""What a host supplies to proactive plugins: who is home, and changes of its entities' states.

Both are optional (``HostServices.presence`` / ``HostServices.states`` may be None): a plugin
that needs one and does not get it must say so and stay quiet, never guess.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class Presence:
    """Whether anyone is home, and whether the home is asleep."""

    someone_home: bool
    asleep: bool = False

    @property
    def can_listen(self) -> bool:
        """Return whether speaking now could reach someone awake."""
        return self.someone_home and not self.asleep


class PresenceProbe(Protocol):
    """The host's view of who is home right now."""

    def presence(self) -> Presence:
        """Return who is home now (no I/O: the host answers from what it already knows)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class StateChange:
    """One entity of the host changed state (None: it did not exist before / was removed)."""

    entity_id: str
    old_state: str | None
    new_state: str | None
    name: str = ""


type StateListener = Callable[[StateChange], None]
type Unsubscribe = Callable[[], None]


class StateWatcher(Protocol):
    """The host's subscription to state changes of named entities."""

    def watch_states(self, entity_ids: Sequence[str], listener: StateListener) -> Unsubscribe:
        """Call ``listener`` (on the event loop) on each change; return how to stop."""
        ...
