"""The durable memory outbox: writes wait on disk until the backend takes them.

Every memory write (an exchange to extract from, a conclusion, a summary) is first put in a
SQLite file (``synchronous=FULL``: on disk when ``put`` returns), then a worker hands the
entries, oldest first, to the processor. A backend outage loses nothing and restarts lose
nothing: the entries stay until processed, and the worker retries with exponential backoff.

An entry that keeps failing while the backend answers (the processor raised something other
than ``MemoryUnavailableError`` and the probe found the backend alive) counts a try; after
``max_attempts`` it is moved aside (kept in the file, counted, never retried), so one
poison entry never blocks the queue. A processed entry can leave follow-up entries (an
exchange becomes its extracted memories) in the same transaction. The file is bounded: past
``max_entries`` a new entry is refused and counted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..chars import valid_text
from ..errors import MemoryUnavailableError
from ..json_types import JSONObject

LOGGER = logging.getLogger(__name__)

MAX_ENTRIES = 5000
MAX_ATTEMPTS = 5
BATCH = 50
FIRST_DELAY = 1.0
MAX_DELAY = 300.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " kind TEXT NOT NULL, payload TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
    " created REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS aside (id INTEGER PRIMARY KEY, kind TEXT NOT NULL,"
    " payload TEXT NOT NULL, attempts INTEGER NOT NULL, created REAL NOT NULL,"
    " reason TEXT NOT NULL)",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxEntry:
    """One waiting write: what kind it is, its JSON payload, how often it failed."""

    id: int
    kind: str
    payload: JSONObject
    attempts: int = 0


type FollowUps = Sequence[tuple[str, JSONObject]]
type Processor = Callable[[OutboxEntry], Awaitable[FollowUps]]
type Probe = Callable[[], Awaitable[object]]


class MemoryOutbox:
    """A bounded on-disk queue of memory writes, drained by one background worker."""

    def __init__(
        self,
        path: Path,
        *,
        max_entries: int = MAX_ENTRIES,
        max_attempts: int = MAX_ATTEMPTS,
        first_delay: float = FIRST_DELAY,
        max_delay: float = MAX_DELAY,
    ) -> None:
        """Keep the queue in ``path``; nothing is opened until the first call."""
        self.path = path
        self.refused = 0
        self._max_entries = max_entries
        self._max_attempts = max_attempts
        self._first_delay = first_delay
        self._max_delay = max_delay
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._wake = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._resting = asyncio.Event()
        """Set while the worker waits: the queue is empty, or the backend is away."""
        self._resting.set()

    async def put(self, kind: str, payload: JSONObject) -> bool:
        """Add one entry, on disk when this returns; False when the queue is full."""
        added = await asyncio.to_thread(self._put, [(kind, payload)])
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

    async def figures(self) -> dict[str, int]:
        """Return how many entries wait, were set aside, were refused: figures only."""
        waiting, aside = await asyncio.to_thread(self._counts)
        return {"waiting": waiting, "set_aside": aside, "refused": self.refused}

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
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    async def entries(self, limit: int = BATCH) -> list[OutboxEntry]:
        """Return the oldest waiting entries."""
        return await asyncio.to_thread(self._peek, limit)

    async def _run(self, process: Processor, probe: Probe) -> None:
        """Drain whenever woken; back off while the backend is away."""
        delay = self._first_delay
        while True:
            await self._wake.wait()
            self._wake.clear()
            self._idle.clear()
            try:
                moved = await self._pass(process, probe)
            except Exception:
                LOGGER.exception("Memory outbox pass failed")
                moved = None
            if moved is True:
                delay = self._first_delay
                self._wake.set()
            elif moved is None:
                self._resting.set()
                try:
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
                except TimeoutError:
                    self._wake.set()
                self._resting.clear()
                delay = min(delay * 2, self._max_delay)
            else:
                delay = self._first_delay
                self._idle.set()
                self._resting.set()

    async def _pass(self, process: Processor, probe: Probe) -> bool | None:
        """Process one batch; True: go on, False: queue empty, None: wait and retry."""
        batch = await self.entries()
        if not batch:
            return False
        done = 0
        failed: list[tuple[OutboxEntry, str]] = []
        outage = False
        for entry in batch:
            try:
                follow = await process(entry)
            except MemoryUnavailableError as err:
                LOGGER.debug("Memory backend away: %s", err)
                outage = True
                break
            except Exception as err:
                failed.append((entry, f"{type(err).__name__}: {err}"[:300]))
                continue
            await asyncio.to_thread(self._settle, entry.id, list(follow))
            done += 1
        if failed and not outage and (done or await _alive(probe)):
            await asyncio.to_thread(self._count_failures, failed)
        if outage or (failed and not done):
            return None
        return True

    def _connection(self) -> sqlite3.Connection:
        """Return the open file, creating it and its tables the first time (blocking)."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level="IMMEDIATE")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            for statement in _SCHEMA:
                db.execute(statement)
            self._db = db
        return self._db

    def _put(self, rows: Sequence[tuple[str, JSONObject]]) -> bool:
        """Insert entries in one transaction unless that overfills the queue (blocking)."""
        with self._lock:
            db = self._connection()
            (waiting,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            if waiting + len(rows) > self._max_entries:
                return False
            with db:
                _insert(db, rows)
            return True

    def _peek(self, limit: int) -> list[OutboxEntry]:
        """Read the oldest entries; an unreadable one is moved aside (blocking)."""
        with self._lock:
            db = self._connection()
            rows = db.execute(
                "SELECT id, kind, payload, attempts FROM entries ORDER BY id LIMIT ?", (limit,)
            ).fetchall()
            entries: list[OutboxEntry] = []
            for row_id, kind, payload, attempts in rows:
                try:
                    data = json.loads(payload)
                except ValueError as err:
                    data = f"unreadable: {err}"
                if not isinstance(data, dict):
                    with db:
                        _move_aside(db, row_id, str(data)[:300])
                    continue
                entries.append(
                    OutboxEntry(
                        id=row_id, kind=kind, payload=cast(JSONObject, data), attempts=attempts
                    )
                )
            return entries

    def _settle(self, entry_id: int, follow: Sequence[tuple[str, JSONObject]]) -> None:
        """Remove a processed entry and add its follow-ups, in one transaction (blocking)."""
        with self._lock:
            db = self._connection()
            with db:
                db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
                _insert(db, follow)

    def _count_failures(self, failed: Sequence[tuple[OutboxEntry, str]]) -> None:
        """Count one try for each failed entry; move aside those out of tries (blocking)."""
        with self._lock:
            db = self._connection()
            with db:
                for entry, reason in failed:
                    db.execute(
                        "UPDATE entries SET attempts = attempts + 1 WHERE id = ?", (entry.id,)
                    )
                    if entry.attempts + 1 >= self._max_attempts:
                        LOGGER.warning(
                            "Memory write %d (%s) set aside after %d tries: %s",
                            entry.id,
                            entry.kind,
                            entry.attempts + 1,
                            reason,
                        )
                        _move_aside(db, entry.id, reason)

    def _counts(self) -> tuple[int, int]:
        """Return the waiting and the set-aside entries (blocking, short)."""
        with self._lock:
            db = self._connection()
            (waiting,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            (aside,) = db.execute("SELECT COUNT(*) FROM aside").fetchone()
            return int(waiting), int(aside)


async def _alive(probe: Probe) -> bool:
    """Say whether the backend answers at all (so failures are the entries' own)."""
    try:
        async with asyncio.timeout(5.0):
            await probe()
    except Exception:
        return False
    return True


def _insert(db: sqlite3.Connection, rows: Sequence[tuple[str, JSONObject]]) -> None:
    """Insert entries (inside a transaction)."""
    now = time.time()
    db.executemany(
        "INSERT INTO entries (kind, payload, created) VALUES (?, ?, ?)",
        [
            (kind, valid_text(json.dumps(payload, ensure_ascii=False)), now)
            for kind, payload in rows
        ],
    )


def _move_aside(db: sqlite3.Connection, entry_id: int, reason: str) -> None:
    """Move one entry to the aside table."""
    db.execute(
        "INSERT OR REPLACE INTO aside (id, kind, payload, attempts, created, reason)"
        " SELECT id, kind, payload, attempts, created, ? FROM entries WHERE id = ?",
        (reason, entry_id),
    )
    db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
