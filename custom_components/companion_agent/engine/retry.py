"""One retry policy: how many tries, how long to wait between them, which failures earn one.

Every engine caller that tries again says so with a ``RetryPolicy``: the tool registry
(``TOOL_RETRY``: dependency errors only), the Wyoming TTS client (a sentence whose connection
failed), the model adapter (``MODEL_RETRY``: before the first token, within its one
first-token deadline), the memory outbox (its backoff while a backend is away, and how many
tries a failing entry gets), the audit writer and the mem0 store's reopening. Waits grow
from ``first_delay`` by ``factor`` up to ``max_delay``, each shortened at random by up to
``jitter`` of itself so that many clients do not come back at the same moment.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

type Sleep = Callable[[float], Awaitable[None]]
type Retryable = Callable[[BaseException], bool]

__all__ = ["NO_RETRY", "RetryPolicy", "Retryable", "Sleep"]


def any_failure(error: BaseException) -> bool:
    """Say that every failure is worth another try (the default)."""
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Tries in all (``attempts``, None: no end), the waits between them, what is retryable.

    ``sleep`` is how a caller that sleeps between tries waits (a test passes a fake clock);
    callers that wait on something else (a wake-up, the next call) take ``delay`` alone.
    """

    attempts: int | None = 3
    first_delay: float = 0.2
    factor: float = 2.0
    max_delay: float = 30.0
    jitter: float = 0.0
    retryable: Retryable = field(default=any_failure, repr=False)
    sleep: Sleep = field(default=asyncio.sleep, repr=False)

    def __post_init__(self) -> None:
        """Refuse a policy that cannot be followed: no try at all, negative waits."""
        if self.attempts is not None and self.attempts < 1:
            raise ValueError("a retry policy makes at least one attempt")
        if min(self.first_delay, self.max_delay, self.factor) < 0 or not 0 <= self.jitter <= 1:
            raise ValueError("retry waits, their factor and jitter cannot be negative")

    def delay(self, retry: int) -> float:
        """Return the wait before retry number ``retry`` (1: the wait after the first try)."""
        wait = min(self.first_delay * self.factor ** max(retry - 1, 0), self.max_delay)
        if self.jitter:
            wait *= 1 - self.jitter * random.random()
        return wait

    def allows(self, attempts: int, error: BaseException) -> bool:
        """Say whether a try may follow ``attempts`` tries, the last one failing with ``error``."""
        return (self.attempts is None or attempts < self.attempts) and self.retryable(error)

    async def wait(self, retry: int) -> None:
        """Sleep the wait before retry number ``retry``."""
        await self.sleep(self.delay(retry))

    async def call[T](self, work: Callable[[], Awaitable[T]]) -> T:
        """Return what ``work()`` returns, trying again as the policy allows; else raise."""
        attempts = 0
        while True:
            attempts += 1
            try:
                return await work()
            except Exception as err:
                if not self.allows(attempts, err):
                    raise
            await self.wait(attempts)


NO_RETRY = RetryPolicy(attempts=1)
"""One try and no other: health checks, and tests that count requests."""
