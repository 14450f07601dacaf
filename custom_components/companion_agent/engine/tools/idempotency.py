"""``IdempotencyCache``: the same call (tool and arguments) within one turn runs once.

Each turn's executor has its own cache, so a model that repeats a call (in a later round,
or twice in one round) gets the first outcome, while a person's new request, a new turn,
runs again. Calls in flight are shared.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from .contract import ToolOutcome, failure

DEFAULT_WINDOW = 30 * 60.0
DEFAULT_MAX_ENTRIES = 512

type Clock = Callable[[], float]


def idempotency_key(conversation_id: str, tool_id: str, canonical_args: str) -> str:
    """Return the key of a call: conversation, tool and canonical arguments, hashed."""
    raw = json.dumps([conversation_id, tool_id, canonical_args], ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


class IdempotencyCache:
    """Remember successful outcomes by key for a window; share calls that are in flight.

    Only successes are remembered: a failed call may be tried again. The cache holds at
    most ``max_entries`` keys, dropping the oldest first.
    """

    def __init__(
        self,
        *,
        window: float = DEFAULT_WINDOW,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Clock = time.monotonic,
    ) -> None:
        """Set the window in seconds, the bound, and the clock."""
        self._window = window
        self._max_entries = max_entries
        self._clock = clock
        self._done: OrderedDict[str, tuple[float, ToolOutcome]] = OrderedDict()
        self._running: dict[str, asyncio.Future[ToolOutcome]] = {}

    def __len__(self) -> int:
        """Return how many outcomes are remembered."""
        return len(self._done)

    def lookup(self, key: str) -> ToolOutcome | None:
        """Return the remembered outcome for a key, if it is still inside the window."""
        self._prune()
        entry = self._done.get(key)
        return None if entry is None else entry[1]

    async def run(
        self, key: str, call: Callable[[], Awaitable[ToolOutcome]]
    ) -> tuple[ToolOutcome, bool]:
        """Run ``call`` once per key; return its outcome and whether it was reused."""
        if (done := self.lookup(key)) is not None:
            return done, True
        if (running := self._running.get(key)) is not None:
            return await asyncio.shield(running), True
        future: asyncio.Future[ToolOutcome] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            outcome = await call()
        except BaseException:
            future.set_result(
                failure(
                    "dependency", "the first delivery of this call was interrupted", retryable=True
                )
            )
            raise
        else:
            future.set_result(outcome)
            if outcome.kind == "success":
                self._remember(key, outcome)
            return outcome, False
        finally:
            del self._running[key]

    def _remember(self, key: str, outcome: ToolOutcome) -> None:
        """Store a success, keeping the cache within its bound."""
        self._done[key] = (self._clock() + self._window, outcome)
        self._done.move_to_end(key)
        while len(self._done) > self._max_entries:
            self._done.popitem(last=False)

    def _prune(self) -> None:
        """Drop outcomes whose window has passed (oldest first)."""
        now = self._clock()
        while self._done:
            key, (until, _) = next(iter(self._done.items()))
            if until > now:
                return
            del self._done[key]
