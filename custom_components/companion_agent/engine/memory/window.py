"""Memory tier 1, the rolling window: one persona's recent exchanges with one owner.

HA starts a new conversation id after five idle minutes, so a conversation's own history
forgets what was said a quarter of an hour ago. The window keeps the last exchanges of a
persona with a person (or the household) across conversation ids: every stored turn is
also added to a per-persona, per-owner file (the same atomic JSON files as conversations,
named by a hash of the owner), and a turn's prompt is built from it.

What is sent is cut to a token budget, in this order: the oldest tool output first (a short
mark stays, so every call keeps its answer), then the model's side of the oldest turns, the
person's own words last; the newest turn stays whole as long as it fits. Turns that fall
out of the window are handed to ``on_overflow`` (tier 2 summarises them in the background).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import replace
from pathlib import Path

from ..events import TurnOutcome
from ..messages import AssistantMessage, ChatMessage, ToolMessage
from ..turn.history import ConversationStore, as_messages
from ..turn.limits import estimate_tokens, message_tokens
from ..turn.stored import StoredTurn
from .types import Forget, MemoryScope

MAX_WINDOW_TURNS = 40
TRIMMED_RESULT = "[older tool output left out]"
_IMAGE = re.compile(
    r"data:image/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/=]+|!\[[^\]\n]{0,200}\]\([^)\s]{0,2000}\)"
)

type OverflowListener = Callable[[MemoryScope, Sequence[StoredTurn]], None]


def without_images(text: str) -> str:
    """Return ``text`` without inline images (data URLs, markdown images): never remembered."""
    return _IMAGE.sub("[image]", text)


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
    """The window of one scope, used by the turn runner as its prompt history."""

    def __init__(
        self,
        store: ConversationStore,
        scope: MemoryScope,
        *,
        budget: int,
        on_overflow: OverflowListener | None = None,
    ) -> None:
        """Read and add to ``scope``'s file in ``store``; send at most ``budget`` tokens."""
        self.scope = scope
        self._file = store.get(scope.owner)
        self._budget = budget
        self._on_overflow = on_overflow

    async def turns(self) -> list[StoredTurn]:
        """Return the window's turns, oldest first, uncut."""
        return await self._file.turns()

    async def load(self) -> list[ChatMessage]:
        """Return the window cut to the budget, as the messages the model sees.

        Turns dropped or cut to the person's words have overflowed: they go to
        ``on_overflow``.
        """
        turns = await self._file.turns()
        kept = trim_window(turns, self._budget)
        dropped = len(turns) - len(kept)
        dropped += sum(
            1
            for turn, was in zip(kept, turns[dropped:], strict=True)
            if was.messages and not turn.messages
        )
        if dropped and self._on_overflow is not None:
            self._on_overflow(self.scope, turns[:dropped])
        return as_messages(kept)

    async def append(self, turn: StoredTurn) -> None:
        """Add a finished turn (images left out); hand what falls out to ``on_overflow``."""
        turns = await self._file.turns()
        if len(turns) >= MAX_WINDOW_TURNS and self._on_overflow is not None:
            self._on_overflow(self.scope, turns[: len(turns) - MAX_WINDOW_TURNS + 1])
        await self._file.append(replace(turn, user=without_images(turn.user)))

    async def amend(self, trace_id: str, heard: str, outcome: TurnOutcome = "interrupted") -> bool:
        """Mark the window's turn ``trace_id`` ``outcome`` after ``heard``; return if found."""
        return await self._file.amend(trace_id, heard, outcome)


class WindowFiles:
    """Every window of one persona, in a folder: one file per owner."""

    def __init__(self, folder: Path, *, capacity: int = 32) -> None:
        """Keep windows in ``folder``, ``capacity`` of them open."""
        self.store = ConversationStore(folder, capacity=capacity, max_turns=MAX_WINDOW_TURNS)

    def window(
        self, scope: MemoryScope, *, budget: int, on_overflow: OverflowListener | None = None
    ) -> RecentWindow:
        """Return the window of ``scope``."""
        return RecentWindow(self.store, scope, budget=budget, on_overflow=on_overflow)

    async def flush(self) -> None:
        """Wait until every open window is on disk."""
        await self.store.flush()

    async def forget(self, owner: str) -> bool:
        """Delete ``owner``'s window; say whether there was one on disk."""
        return await self.store.delete(owner)


async def forget_windows(
    root: Path, open_files: MutableMapping[str, WindowFiles], what: Forget
) -> int:
    """Delete the windows ``what`` names (a person's, or a persona's); return how many.

    A persona's windows held in memory are dropped from ``open_files`` first (after their
    pending writes), so nothing writes them back.
    """
    if what.record_id is not None:
        return 0
    if what.agent_id is not None:
        files = open_files.pop(what.agent_id, None)
        if files is not None:
            await files.flush()
        folder = root / what.agent_id
        return await asyncio.to_thread(_delete_all, folder)
    if what.owner is None:
        return 0
    personas = await asyncio.to_thread(
        lambda: [p.name for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
    )
    removed = 0
    for persona_id in personas:
        files = open_files.get(persona_id) or WindowFiles(root / persona_id)
        removed += await files.forget(what.owner)
    return removed


def _delete_all(folder: Path) -> int:
    """Delete every window file in ``folder``; return how many (blocking)."""
    removed = 0
    for path in folder.glob("*.json") if folder.is_dir() else ():
        path.unlink(missing_ok=True)
        removed += 1
    return removed
