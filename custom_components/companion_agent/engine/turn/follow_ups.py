"""``FollowUps``: the person's answer to a conversation the companion started continues it.

A host that asks the person something on a satellite may not choose the id of the
conversation the answer opens (Home Assistant's ``assist_satellite.start_conversation``
opens a new one). So when a satellite has just played a proactive turn, the next turn that
satellite brings within ``FOLLOW_UP_WINDOW`` seconds reads (and adds to) the proactive
turn's history, and so do the later turns of that new conversation.
"""

from __future__ import annotations

from collections import OrderedDict

FOLLOW_UP_WINDOW = 60.0
MAX_ALIASES = 64


class FollowUps:
    """Which history a satellite's next conversation continues, for a short while."""

    def __init__(self, window: float = FOLLOW_UP_WINDOW) -> None:
        """Remember nothing yet; a started conversation waits ``window`` seconds for an answer."""
        self._window = window
        self._started: dict[str, tuple[str, float]] = {}
        self._aliases: OrderedDict[str, str] = OrderedDict()

    def started(self, satellite: str, history_id: str, now: float) -> None:
        """Note that ``satellite`` just started a conversation kept under ``history_id``."""
        self._started[satellite] = (history_id, now + self._window)

    def history_id(self, conversation_id: str, satellite: str | None, now: float) -> str:
        """Return the history a turn of ``conversation_id`` from ``satellite`` continues."""
        if (alias := self._aliases.get(conversation_id)) is not None:
            self._aliases.move_to_end(conversation_id)
            return alias
        waiting = self._started.pop(satellite, None) if satellite is not None else None
        if waiting is None or now > waiting[1]:
            return conversation_id
        self._aliases[conversation_id] = waiting[0]
        while len(self._aliases) > MAX_ALIASES:
            self._aliases.popitem(last=False)
        return waiting[0]
