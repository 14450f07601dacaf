"""Bounds on what a turn takes in: the person's words, their pace, and the history sent.

A very long utterance is cut (the model is told); a person or a device that speaks faster
than ``turns_per_minute`` gets a short spoken line and no model call; the history sent to
the model is cut, oldest turns first, to a token budget. A turn's deadline allows its
chat model's wait for a busy server.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..chars import is_wide
from ..llm import LLMSettings
from ..messages import AssistantMessage, ChatMessage, ContextSnippet, ToolMessage, UserMessage

WINDOW = 60.0
MAX_KEYS = 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnLimits:
    """The host's bounds: utterance length, turns a minute per person and device, history."""

    max_input_chars: int = 4000
    turns_per_minute: int = 20
    history_tokens: int = 3000


class RateLimiter:
    """A sliding one-minute window per key (a user, a device); bounded in keys."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        """Allow ``per_minute`` turns a minute per key (0: no limit)."""
        self._per_minute = per_minute
        self._clock = clock
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def allow(self, *keys: str) -> bool:
        """Count one turn for every key, unless one of them is over its limit."""
        if self._per_minute <= 0:
            return True
        now = self._clock()
        windows = [self._window(key, now) for key in keys]
        if any(len(window) >= self._per_minute for window in windows):
            return False
        for window in windows:
            window.append(now)
        return True

    def _window(self, key: str, now: float) -> deque[float]:
        """Return a key's recent turns, forgetting those older than the window."""
        window = self._seen.pop(key, None) or deque()
        while window and window[0] <= now - WINDOW:
            window.popleft()
        self._seen[key] = window
        while len(self._seen) > MAX_KEYS:
            self._seen.popitem(last=False)
        return window


def turn_deadline(deadline: float, chat: LLMSettings | None) -> float:
    """Return a turn's time: the profile's ``deadline`` plus what a busy model may add.

    A busy server (it took the request, no token yet) may take ``busy_timeout`` where one
    that does not answer takes ``first_token_timeout``; the difference is added, so the
    turn ends on the model's own "slow" error, not on the turn's deadline.
    """
    if chat is None:
        return deadline
    return deadline + max(0.0, chat.busy_timeout - chat.first_token_timeout)


def estimate_tokens(text: str) -> int:
    """Estimate a text's tokens: a wide (CJK) character is about one, other text four a token."""
    wide = sum(1 for char in text if is_wide(char))
    return wide + (len(text) - wide + 3) // 4


def message_tokens(message: ChatMessage) -> int:
    """Estimate one message's tokens, tool calls included."""
    match message:
        case AssistantMessage(content=content, tool_calls=calls):
            extra = sum(estimate_tokens(c.name) + estimate_tokens(c.arguments) for c in calls)
            return 4 + estimate_tokens(content) + extra
        case UserMessage(content=content) | ToolMessage(content=content):
            return 4 + estimate_tokens(content)
        case _:
            return 4 + estimate_tokens(message.content)


def within_budget(history: Sequence[ChatMessage], budget: int) -> list[ChatMessage]:
    """Drop the oldest whole turns until the history fits ``budget`` tokens."""
    starts = [i for i, message in enumerate(history) if isinstance(message, UserMessage)]
    total = sum(message_tokens(message) for message in history)
    cut = 0
    for start in [*starts[1:], len(history)]:
        if total <= budget:
            break
        total -= sum(message_tokens(message) for message in history[cut:start])
        cut = start
    return list(history[cut:])


def pace_keys(user_id: str | None, device_id: str | None) -> tuple[str, ...]:
    """Return whose pace a turn counts against: its person and its device, as known."""
    keys = (
        *((f"user:{user_id}",) if user_id else ()),
        *((f"device:{device_id}",) if device_id else ()),
    )
    return keys or ("anonymous",)


def cut_notice(input_chars: int, text: str) -> tuple[ContextSnippet, ...]:
    """Tell the model the person's words were cut to the limit, if they were."""
    if input_chars <= len(text):
        return ()
    note = (
        f"The person's message had {input_chars} characters; only the first {len(text)} are shown."
    )
    return (ContextSnippet(source="input", text=note),)
