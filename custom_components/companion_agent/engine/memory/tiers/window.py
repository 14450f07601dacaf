"""Memory tier 1, the rolling window: one persona's recent exchanges with one owner.

HA starts a new conversation id after five idle minutes, so a conversation's own history
forgets what was said a quarter of an hour ago. The window is the last exchanges of a
persona with a person (or the household) across conversation ids: the window view of the
exchange store (``turn.exchanges``), whose rows the conversations share, and a turn's
prompt is built from it.

What is sent is cut to a token budget, in this order: the oldest tool output first (a short
mark stays, so every call keeps its answer), then the model's side of the oldest turns, the
person's own words last; the newest turn stays whole as long as it fits. Turns that fall
out of the window (past ``MAX_WINDOW_TURNS``, or cut to the budget) are handed to
``on_overflow`` (tier 2 summarises them in the background).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ...messages import AssistantMessage, ChatMessage, ToolMessage
from ...turn.exchanges import MAX_WINDOW_TURNS, ExchangeStore
from ...turn.history import as_messages
from ...turn.limits import estimate_tokens, message_tokens
from ...turn.stored import StoredTurn
from ..models import MemoryScope

TRIMMED_RESULT = "[older tool output left out]"

type OverflowListener = Callable[[MemoryScope, Sequence[StoredTurn]], None]


def turn_tokens(turn: StoredTurn) -> int:
    """Estimate the tokens a stored turn costs in the prompt."""
    return 4 + estimate_tokens(turn.user) + sum(message_tokens(m) for m in turn.messages)


def trim_window(turns: Sequence[StoredTurn], budget: int) -> list[StoredTurn]:
    """Cut ``turns`` to ``budget`` tokens: old tool output, old answers, then old words."""
    kept = list(turns)
    total = sum(turn_tokens(turn) for turn in kept)
    older = len(kept) - 1  # the newest turn stays whole while it can
    for index, turn in enumerate(kept[:older]):
        if total <= budget:
            return kept
        slim = replace(turn, messages=tuple(_slim(m) for m in turn.messages))
        total += turn_tokens(slim) - turn_tokens(turn)
        kept[index] = slim
    for index, turn in enumerate(kept[:older]):
        if total <= budget:
            return kept
        words = StoredTurn(user=turn.user, time=turn.time)
        total += turn_tokens(words) - turn_tokens(turn)
        kept[index] = words
    while kept and total > budget:
        total -= turn_tokens(kept.pop(0))
    return kept


def _slim(message: AssistantMessage | ToolMessage) -> AssistantMessage | ToolMessage:
    """Return a tool result as a short mark; anything else as it is."""
    if isinstance(message, ToolMessage) and len(message.content) > len(TRIMMED_RESULT):
        return replace(message, content=TRIMMED_RESULT)
    return message


class RecentWindow:
    """The window of one scope, used by the turn runner as its prompt history (read only)."""

    def __init__(
        self,
        store: ExchangeStore,
        scope: MemoryScope,
        *,
        budget: int,
        on_overflow: OverflowListener | None = None,
    ) -> None:
        """Read ``scope``'s window in ``store``; send at most ``budget`` tokens."""
        self.scope = scope
        self._store = store
        self._budget = budget
        self._on_overflow = on_overflow

    async def turns(self) -> list[StoredTurn]:
        """Return the window's turns, oldest first, uncut."""
        return await self._store.window(self.scope.agent_id, self.scope.owner)

    async def load(self) -> list[ChatMessage]:
        """Return the window cut to the budget, as the messages the model sees.

        The turn that fell out past ``MAX_WINDOW_TURNS``, and turns dropped or cut to the
        person's words, have overflowed: they go to ``on_overflow``.
        """
        read = await self._store.window(self.scope.agent_id, self.scope.owner, MAX_WINDOW_TURNS + 1)
        fallen, turns = read[: len(read) - MAX_WINDOW_TURNS], read[-MAX_WINDOW_TURNS:]
        kept = trim_window(turns, self._budget)
        dropped = len(turns) - len(kept)
        dropped += sum(
            1
            for turn, was in zip(kept, turns[dropped:], strict=True)
            if was.messages and not turn.messages
        )
        if (fallen or dropped) and self._on_overflow is not None:
            self._on_overflow(self.scope, [*fallen, *turns[:dropped]])
        return as_messages(kept)
