"""The durable memory outbox: writes wait on disk until the backend takes them.

Every memory write (an exchange to extract from, a conclusion, a summary) is first put in a
SQLite file (``synchronous=FULL``: on disk when ``put`` returns), then a worker hands the
entries, oldest first, to the processor. A backend outage loses nothing and restarts lose
nothing: the entries stay until processed, and the worker retries with exponential backoff
(``OUTBOX_RETRY``: 1 s doubling to 300 s).

An entry that keeps failing while the backend answers (the processor raised something other
than ``MemoryUnavailableError`` and the probe found the backend alive) counts a try; after
``retry.attempts`` it is moved aside (kept in the file, counted, never retried), so one
poison entry never blocks the queue. A processed entry can leave follow-up entries (an
exchange becomes its extracted memories) in the same transaction. The file is bounded: past
``max_entries`` a new entry is refused and counted; the set-aside entries keep the newest
``max_aside``. A file that is not a sound outbox is moved aside and reported through
``on_corrupt`` (``outbox_file``); a file that cannot be written at all costs the entry
(counted and logged), never the turn. ``forget`` keeps a tombstone in the file and drops
what it covers; every later entry is screened against the tombstones as it is written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from enum import Enum
from pathlib import Path

from ...chars import clean_text
from ...errors import CorruptionReporter, MemoryStoreError, MemoryUnavailableError
from ...json_types import JSONObject
from ...retry import RetryPolicy
from .outbox_file import MAX_ASIDE, MAX_ENTRIES, OutboxEntry, OutboxFile, Screen, no_screen
from .tombstones import Tombstone

LOGGER = logging.getLogger(__name__)

BATCH = 50
OUTBOX_RETRY = RetryPolicy(attempts=5, first_delay=1.0, factor=2.0, max_delay=300.0)
"""Five tries for an entry the live backend refuses; waits of 1 s doubling to 300 s."""

__all__ = ["MAX_ENTRIES", "OUTBOX_RETRY", "MemoryOutbox", "OutboxEntry"]


type FollowUps = Sequence[tuple[str, JSONObject]]
type Processor = Callable[[OutboxEntry], Awaitable[FollowUps]]
type Probe = Callable[[], Awaitable[object]]


class PassOutcome(Enum):
    """How one pass over the queue ended, and so what the worker does next."""

    PROGRESSED = "progressed"
    """Entries were taken: look again at once."""
    EMPTY = "empty"
    """Nothing waits: the queue is idle until the next kick."""
    BLOCKED = "blocked"
    """A backend is away, or every entry taken failed: wait, then retry."""


class MemoryOutbox:
    """A bounded on-disk queue of memory writes, drained by one background worker."""

    def __init__(
        self,
        path: Path,
        *,
        max_entries: int = MAX_ENTRIES,
        max_aside: int = MAX_ASIDE,
        retry: RetryPolicy = OUTBOX_RETRY,
        on_corrupt: CorruptionReporter | None = None,
        screen: Screen = no_screen,
    ) -> None:
        """Keep the queue in ``path``; ``screen`` applies tombstones to what is written."""
        self.path = path
        self.refused = 0
        self.lost = 0
        self._file = OutboxFile(
            path, max_entries=max_entries, max_aside=max_aside, on_corrupt=on_corrupt,
            screen=screen,
        )  # fmt: skip
        self._retry = retry
        self._wake = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._resting = asyncio.Event()
        """Set while the worker waits: the queue is empty, or the backend is away."""
        self._resting.set()

    async def put(self, kind: str, payload: JSONObject) -> bool:
        """Add one entry, on disk when this returns; False when it is full or unwritable."""
        try:
            added = await self._file.put([(kind, payload)])
        except (MemoryStoreError, OSError) as err:
            self.lost += 1
            LOGGER.warning("Memory outbox %s not writable (%s); a write is lost", self.path, err)
            await self._reset()  # the next put opens (and checks) again
            return False
        if not added:
            self.refused += 1
            LOGGER.warning("Memory outbox is full; a write was refused")
        self.kick()
        return added

    def kick(self) -> None:
        """Wake the worker: the backend may take entries now."""
        self._idle.clear()
        self._resting.clear()
        self._wake.set()

    def use_screen(self, screen: Screen) -> None:
        """Screen every entry written from now on (and every forget) with ``screen``."""
        self._file.screen = screen

    async def counts(self) -> dict[str, int]:
        """Return how many entries wait, were set aside, refused, lost or forgotten."""
        waiting, aside = await self._file.counts()
        return {
            "waiting": waiting,
            "set_aside": aside,
            "refused": self.refused,
            "lost": self.lost,
            "forgotten": self._file.forgotten,
        }

    def start(self, process: Processor, probe: Probe) -> None:
        """Start the worker: ``process`` handles an entry, ``probe`` tells an outage apart."""
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(
                self._run(process, probe), name=f"memory outbox {self.path.name}"
            )
        self.kick()

    async def drained(self, grace: float) -> bool:
        """Wait until the worker found the queue empty (or ``grace`` s); say whether it did."""
        try:
            async with asyncio.timeout(grace):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    async def close(self, grace: float = 0.0) -> None:
        """Drain for up to ``grace`` s (not while the backend is away), stop, close the file."""
        if grace > 0 and self._worker is not None:
            try:
                async with asyncio.timeout(grace):
                    await self._resting.wait()
            except TimeoutError:
                LOGGER.warning(
                    "Memory outbox still busy after %.0f s; the rest waits on disk", grace
                )
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
        await self._file.close()

    async def forget(self, tombstones: Sequence[Tombstone]) -> int:
        """Keep one forget's ``tombstones`` on disk and drop the waiting writes they cover;
        return how many."""
        return await self._file.forget(tombstones)

    async def tombstones(self) -> list[Tombstone]:
        """Return the tombstones kept on disk, oldest first."""
        return await self._file.tombstones()

    async def entries(self, limit: int = BATCH) -> list[OutboxEntry]:
        """Return the oldest waiting entries."""
        return await self._file.peek(limit, 0, frozenset())

    async def _run(self, process: Processor, probe: Probe) -> None:
        """Drain whenever woken; back off while the backend is away."""
        waits = 0
        while True:
            await self._wake.wait()
            self._wake.clear()
            self._idle.clear()
            try:
                outcome = await self._pass(process, probe)
            except Exception:
                LOGGER.exception("Memory outbox pass failed")
                outcome = PassOutcome.BLOCKED
            if outcome is PassOutcome.PROGRESSED:
                waits = 0
                self._wake.set()
            elif outcome is PassOutcome.BLOCKED:
                waits += 1
                self._resting.set()
                try:
                    async with asyncio.timeout(self._retry.delay(waits)):
                        await self._wake.wait()
                except TimeoutError:
                    self._wake.set()
                self._resting.clear()
            else:
                waits = 0
                self._idle.set()
                self._resting.set()

    async def _pass(self, process: Processor, probe: Probe) -> PassOutcome:
        """Process the queue once; say whether to go on, rest (empty) or wait and retry.

        An entry whose backend is away blocks only the later entries of its kind (a graph
        that is down does not hold up the store's writes); the rest go on, in order.
        """
        done = 0
        failed: list[tuple[OutboxEntry, str]] = []
        blocked: set[str] = set()
        after = 0
        seen = False
        while batch := await self._file.peek(BATCH, after, frozenset(blocked)):
            seen = True
            for entry in batch:
                after = entry.id
                if entry.kind in blocked:
                    continue
                try:
                    follow = await process(entry)
                except MemoryUnavailableError as err:
                    LOGGER.debug("Memory backend away for %s: %s", entry.kind, err)
                    blocked.add(entry.kind)
                    continue
                except Exception as err:
                    failed.append((entry, clean_text(f"{type(err).__name__}: {err}", 300)))
                    continue
                await self._file.finish_entry(entry.id, list(follow))
                done += 1
        if not seen:
            return PassOutcome.EMPTY
        outage = bool(blocked)
        reasons = {entry.id: reason for entry, reason in failed}
        if failed and (done or await _alive(probe)):
            out = await self._file.count_failures(failed, self._retry.attempts)
            for entry in out:
                LOGGER.warning(
                    "Memory write %d (%s) set aside after %d tries: %s",
                    entry.id,
                    entry.kind,
                    entry.attempts + 1,
                    reasons[entry.id],
                )
        if outage or (failed and not done):
            return PassOutcome.BLOCKED
        return PassOutcome.PROGRESSED

    async def _reset(self) -> None:
        """Close the file after a failed write; a failure to close is only logged."""
        try:
            await self._file.reset()
        except (MemoryStoreError, OSError) as err:
            LOGGER.debug("Memory outbox %s not closed cleanly: %s", self.path, err)


async def _alive(probe: Probe) -> bool:
    """Say whether the backend answers at all (so failures are the entries' own)."""
    try:
        async with asyncio.timeout(5.0):
            await probe()
    except Exception:
        return False
    return True
