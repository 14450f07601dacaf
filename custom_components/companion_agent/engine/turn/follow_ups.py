"""Follow-ups: the person's answer to what the companion asked continues the conversation.

``expects_answer``: whether a finished turn waits for the person's answer, so that a host
may listen for it without the wake word (Home Assistant's ``continue_conversation``). It
does when its call is held for their yes or no, or when what it said ends with a question
mark: ``?``, the full-width ``？`` of Chinese and Japanese, the Greek ``;`` (U+037E, and
the semicolon it normalises to, as Home Assistant's ``ChatLog.continue_conversation``
takes it), the Arabic ``؟``; closing quotes and brackets after it do not count. A turn the
person spoke over, or one that failed, waits for nothing.

``FollowUps``: a host that asks the person something on a satellite may not choose the id
of the conversation the answer opens (Home Assistant's ``assist_satellite.start_conversation``
opens a new one). So when a satellite has just played a proactive turn, the next turn that
satellite brings within ``FOLLOW_UP_WINDOW`` seconds reads (and adds to) the proactive
turn's history, and so do the later turns of that new conversation.
"""

from __future__ import annotations

from collections import OrderedDict

from ..events import TurnResult

__all__ = ["FollowUps", "asks", "expects_answer"]

FOLLOW_UP_WINDOW = 60.0
MAX_ALIASES = 64
QUESTION_MARKS = ("?", "\uff1f", ";", "\u037e", "\u061f")
"""``?``, ``？``, the Greek question mark (``;`` and U+037E), the Arabic ``؟``."""
CLOSING = "\"'\u2019\u201d\u00bb\u300d\u300f)]\uff09\u3011*_ \t\r\n"
"""What may follow a question mark and still end a question: quotes, brackets, emphasis."""


def asks(text: str) -> bool:
    """Say whether ``text`` ends with a question."""
    return text.rstrip(CLOSING).endswith(QUESTION_MARKS)


def expects_answer(result: TurnResult, spoken: str) -> bool:
    """Say whether a turn that ended as ``result``, having said ``spoken``, waits for an answer."""
    if result.outcome in ("interrupted", "failed"):
        return False
    held = any(call.status == "pending_confirmation" for call in result.tool_calls)
    return held or asks(spoken)


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
