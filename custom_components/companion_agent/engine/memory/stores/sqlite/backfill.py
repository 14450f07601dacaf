"""The background task that embeds records stored without a vector, until each has one.

A record can be stored without its vector: the embedding server was away or slow, or
the records came from before an embedder (or another model) was set. ``VectorBackfill``
runs beside the store: woken at open and whenever an add left records without vectors
(and every ``IDLE_CHECK`` seconds anyway), it embeds them ``BATCH`` at a time with a
pause between batches so turns keep the embedding server first; a failure waits
``BACKOFF`` seconds, doubling up to ``MAX_BACKOFF``. A text the server refuses outright
is marked, not retried forever (see ``vectors.mark_refused``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ....errors import EmbeddingError, MemoryStoreError

LOGGER = logging.getLogger(__name__)

BATCH = 32
PAUSE = 0.5
BACKOFF = 5.0
MAX_BACKOFF = 300.0
IDLE_CHECK = 900.0

type Fill = Callable[[int], Awaitable[int]]
"""Embed up to n records without a vector; return how many it took (embedded or refused)."""


class VectorBackfill:
    """Embed the records that lack a vector in the background, bounded, with backoff."""

    def __init__(
        self,
        fill: Fill,
        *,
        batch: int = BATCH,
        pause: float = PAUSE,
        backoff: float = BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        idle_check: float = IDLE_CHECK,
    ) -> None:
        """Call ``fill(batch)`` until it finds nothing; see the module docs for the timing."""
        self._fill = fill
        self.batch = batch
        self.pause = pause
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.idle_check = idle_check
        self._wake = asyncio.Event()
        self.caught_up = asyncio.Event()
        """Set while the last pass left no record without a vector."""
        self._task: asyncio.Task[None] | None = None
        self.embedded = 0
        self.failures = 0

    def start(self) -> None:
        """Start the task (once) and let it look at once."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="memory vector backfill")
        self.wake()

    def wake(self) -> None:
        """Say records were stored without a vector."""
        self.caught_up.clear()
        self._wake.set()

    async def _run(self) -> None:
        """Wait to be woken, then embed batch after batch until none is left."""
        delay = self.backoff
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.idle_check):
                    await self._wake.wait()
            self._wake.clear()
            while True:
                try:
                    done = await self._fill(self.batch)
                except (EmbeddingError, MemoryStoreError) as err:
                    self.failures += 1
                    LOGGER.info("Vector backfill waits %.0f s: %s", delay, err)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, self.max_backoff)
                    continue
                delay = self.backoff
                self.embedded += done
                if done < self.batch:
                    self.caught_up.set()
                    break
                await asyncio.sleep(self.pause)

    async def close(self) -> None:
        """Stop the task."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
