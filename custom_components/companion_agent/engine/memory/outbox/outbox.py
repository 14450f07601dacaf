"""The durable memory outbox: writes wait in a SQLite file until the backend takes them.

Every memory write (an exchange to extract from, a conclusion, a summary) is first put in a
SQLite file (``synchronous=FULL``: on disk when ``put`` returns), then a worker hands the
entries, oldest first, to the processor. A backend outage loses nothing and restarts lose
nothing: the entries stay until processed, and the worker retries with exponential backoff
(``OUTBOX_RETRY``: 1 s doubling to 300 s).

An entry that keeps failing while the backend answers (the processor raised something other
than ``MemoryUnavailableError`` and the probe found the backend alive) counts a try; after
``retry.attempts`` it is moved aside (kept in the file, counted, never retried), so one
poison entry never blocks the queue. A processed entry can leave follow-up entries (an
exchange becomes its extracted memories) in the same transaction. A file that cannot be
written at all costs the entry (counted and logged), never the turn.

**The file** (``OutboxFile``) runs on its own ``SQLiteWorker`` (one thread, one
connection). A file that is not a sound outbox when it is opened (not SQLite, damaged,
someone else's tables) is moved aside (``<name>.corrupt-<time>``, with its WAL), reported
to ``on_corrupt``, and a fresh one starts. Both tables are bounded: past ``max_entries`` a
put is refused and counted; past ``max_aside`` the oldest set-aside entries go. Nothing is
opened until the first call; after ``reset`` the next call opens, and checks, the file
again. After ``close`` a late call (a turn that ended while the host was unloading) still
reaches the file, on a worker of its own that ends with the call, so nothing stays open.

Forget wins here too: ``forget`` keeps a tombstone in the file and screens the waiting
entries by it, and ``put`` and ``finish_entry`` screen every new entry against the
tombstones, each in its own transaction: an extraction still running when the forget came
never lands its memories.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import cast

from ...chars import clean_text, valid_text
from ...errors import CorruptionReporter, MemoryStoreError, MemoryUnavailableError
from ...json_types import JSONObject
from ...retry import RetryPolicy
from ...sqlite import SQLiteWorker, check_tables, open_checked
from .tombstones import MAX_TOMBSTONES, Tombstone, dump_tombstone, load_tombstone

LOGGER = logging.getLogger(__name__)

BATCH = 50
OUTBOX_RETRY = RetryPolicy(attempts=5, first_delay=1.0, factor=2.0, max_delay=300.0)
"""Five tries for an entry the live backend refuses; waits of 1 s doubling to 300 s."""

MAX_ENTRIES = 5000
MAX_ASIDE = 500
_TABLES = frozenset({"entries", "aside"})
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " kind TEXT NOT NULL, payload TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
    " created REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS aside (id INTEGER PRIMARY KEY, kind TEXT NOT NULL,"
    " payload TEXT NOT NULL, attempts INTEGER NOT NULL, created REAL NOT NULL,"
    " reason TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS forgotten (id INTEGER PRIMARY KEY, tombstone TEXT NOT NULL)",
)

_KEEP_NEWEST_TOMBSTONES = (
    "DELETE FROM forgotten WHERE id NOT IN (SELECT id FROM forgotten ORDER BY id DESC LIMIT ?)"
)

type Screen = Callable[[str, JSONObject, Sequence[Tombstone]], JSONObject | None]
"""Return an entry's payload less what the tombstones refuse (None: nothing is left)."""


def no_screen(kind: str, payload: JSONObject, tombstones: Sequence[Tombstone]) -> JSONObject:
    """Keep every entry as it is (an outbox that holds no memories)."""
    return payload


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxEntry:
    """One waiting write: what kind it is, its JSON payload, how often it failed."""

    id: int
    kind: str
    payload: JSONObject
    attempts: int = 0


class OutboxFile:
    """The outbox's SQLite file, each call a transaction on the file's own thread."""

    def __init__(
        self,
        path: Path,
        *,
        max_entries: int = MAX_ENTRIES,
        max_aside: int = MAX_ASIDE,
        on_corrupt: CorruptionReporter | None = None,
        screen: Screen = no_screen,
    ) -> None:
        """Keep the queue in ``path``; ``screen`` applies tombstones to what is written."""
        self.path = path
        self.screen = screen
        self.forgotten = 0
        """How many entries tombstones refused (put, follow-ups or dropped by a forget)."""
        self._tombstones: list[Tombstone] | None = None  # read once, on the file's thread
        self._max_entries = max_entries
        self._max_aside = max_aside
        self._on_corrupt = on_corrupt
        self._worker: SQLiteWorker | None = None
        self._closed = False

    async def put(self, rows: Sequence[tuple[str, JSONObject]]) -> bool:
        """Insert entries in one transaction unless that overfills the queue."""

        def work(db: sqlite3.Connection) -> bool:
            """Count, then insert if there is room."""
            (waiting,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            if waiting + len(rows) > self._max_entries:
                return False
            self._insert(db, rows)
            return True

        return await self._transaction(work)

    async def peek(
        self, limit: int, after: int = 0, skip: frozenset[str] = frozenset()
    ) -> list[OutboxEntry]:
        """Read the oldest entries after id ``after`` not of a ``skip`` kind (bad ones go aside)."""

        def work(db: sqlite3.Connection) -> list[OutboxEntry]:
            """Read, setting aside the entries that are not JSON objects."""
            marks = ",".join("?" * len(skip))
            rows = db.execute(
                "SELECT id, kind, payload, attempts FROM entries"
                f" WHERE id > ? AND kind NOT IN ({marks}) ORDER BY id LIMIT ?",
                (after, *sorted(skip), limit),
            ).fetchall()
            entries: list[OutboxEntry] = []
            for row_id, kind, payload, attempts in rows:
                data = _object(payload)
                if data is None:
                    self._set_aside(db, row_id, clean_text(f"unreadable: {payload}", 300))
                    continue
                entries.append(OutboxEntry(id=row_id, kind=kind, payload=data, attempts=attempts))
            return entries

        return await self._transaction(work)

    async def finish_entry(self, entry_id: int, follow: Sequence[tuple[str, JSONObject]]) -> None:
        """Remove a processed entry and add its follow-ups, in one transaction."""

        def work(db: sqlite3.Connection) -> None:
            """Delete and insert."""
            db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
            self._insert(db, follow)

        await self._transaction(work)

    async def count_failures(
        self, failed: Sequence[tuple[OutboxEntry, str]], max_attempts: int | None
    ) -> list[OutboxEntry]:
        """Count one try for each failed entry; set aside (and return) those out of tries."""

        def work(db: sqlite3.Connection) -> list[OutboxEntry]:
            """Count, and set aside the entries out of tries (None: no entry ever is)."""
            out: list[OutboxEntry] = []
            for entry, reason in failed:
                db.execute("UPDATE entries SET attempts = attempts + 1 WHERE id = ?", (entry.id,))
                if max_attempts is not None and entry.attempts + 1 >= max_attempts:
                    self._set_aside(db, entry.id, reason)
                    out.append(entry)
            return out

        return await self._transaction(work)

    async def forget(self, tombstones: Sequence[Tombstone]) -> int:
        """Keep ``tombstones`` (one forget's), screen the waiting entries by them; return how
        many went whole."""

        def work(db: sqlite3.Connection) -> int:
            """Store the tombstones, then drop or rewrite what they cover."""
            known = self._known(db)
            db.executemany(
                "INSERT INTO forgotten (tombstone) VALUES (?)",
                [(json.dumps(dump_tombstone(tombstone)),) for tombstone in tombstones],
            )
            db.execute(_KEEP_NEWEST_TOMBSTONES, (MAX_TOMBSTONES,))
            gone = 0
            for row_id, kind, raw in db.execute("SELECT id, kind, payload FROM entries").fetchall():
                payload = _object(raw)
                if payload is None:
                    continue
                kept = self.screen(kind, payload, tombstones)
                if kept is None:
                    db.execute("DELETE FROM entries WHERE id = ?", (row_id,))
                    gone += 1
                elif kept != payload:
                    db.execute(
                        "UPDATE entries SET payload = ? WHERE id = ?", (_dumped(kept), row_id)
                    )
            known.extend(tombstones)
            del known[:-MAX_TOMBSTONES]
            self.forgotten += gone
            return gone

        return await self._transaction(work)

    async def tombstones(self) -> list[Tombstone]:
        """Return the tombstones the file keeps, oldest first."""
        return await self._transaction(lambda db: list(self._known(db)))

    async def counts(self) -> tuple[int, int]:
        """Return the waiting and the set-aside entries."""

        def work(db: sqlite3.Connection) -> tuple[int, int]:
            """Count both tables."""
            (waiting,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            (aside,) = db.execute("SELECT COUNT(*) FROM aside").fetchone()
            return int(waiting), int(aside)

        return await self._transaction(work)

    async def reset(self) -> None:
        """Close the connection; the next call opens, and checks, the file again."""
        self._tombstones = None
        if self._worker is not None:
            await self._worker.reset()

    async def close(self) -> None:
        """Close the file and end its thread (a later call opens it for that call alone)."""
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker.close()

    async def _transaction[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one transaction on the file's worker (after ``close``: its own)."""
        if not self._closed:
            return await self._file().transaction(work)
        late = self._new_worker()
        try:
            return await late.transaction(work)
        finally:
            await late.close()

    def _file(self) -> SQLiteWorker:
        """Return the file's worker, made on first use."""
        if self._worker is None:
            self._worker = self._new_worker()
        return self._worker

    def _new_worker(self) -> SQLiteWorker:
        """Return a worker that opens (and checks) the outbox file on its first call."""
        corrupt = self._on_corrupt
        return SQLiteWorker(
            self.path, opener=open_outbox, failure=MemoryStoreError, on_corrupt=corrupt
        )

    def _known(self, db: sqlite3.Connection) -> list[Tombstone]:
        """Return the file's tombstones, read once (one that cannot be read is left out)."""
        if self._tombstones is None:
            known: list[Tombstone] = []
            for (raw,) in db.execute("SELECT tombstone FROM forgotten ORDER BY id"):
                try:
                    known.append(load_tombstone(json.loads(raw)))
                except (ValueError, TypeError):
                    continue
            self._tombstones = known
        return self._tombstones

    def _insert(self, db: sqlite3.Connection, rows: Sequence[tuple[str, JSONObject]]) -> None:
        """Insert entries the tombstones leave something of (inside a transaction)."""
        now = time.time()
        known = self._known(db)
        kept: list[tuple[str, str, float]] = []
        for kind, payload in rows:
            screened = self.screen(kind, payload, known)
            if screened is None:
                self.forgotten += 1
                continue
            kept.append((kind, _dumped(screened), now))
        db.executemany("INSERT INTO entries (kind, payload, created) VALUES (?, ?, ?)", kept)

    def _set_aside(self, db: sqlite3.Connection, entry_id: int, reason: str) -> None:
        """Move one entry to the aside table, dropping the oldest beyond ``max_aside``."""
        db.execute(
            "INSERT OR REPLACE INTO aside (id, kind, payload, attempts, created, reason)"
            " SELECT id, kind, payload, attempts, created, ? FROM entries WHERE id = ?",
            (reason, entry_id),
        )
        db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
        keep = "SELECT id FROM aside ORDER BY id DESC LIMIT ?"
        db.execute(f"DELETE FROM aside WHERE id NOT IN ({keep})", (self._max_aside,))


def open_outbox(path: Path) -> tuple[sqlite3.Connection, Path | None]:
    """Open the outbox at ``path`` (``synchronous=FULL``); an unusable file moves aside."""
    return open_checked(path, _prepare, synchronous="FULL")


def _prepare(db: sqlite3.Connection, path: Path) -> None:
    """Check the file is sound and empty or an outbox; create the tables."""
    check_tables(db, _TABLES, "a memory outbox")
    for statement in _SCHEMA:
        db.execute(statement)


def _object(raw: str) -> JSONObject | None:
    """Return a stored payload as a JSON object, None when it is not one."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return cast(JSONObject, data) if isinstance(data, dict) else None


def _dumped(payload: JSONObject) -> str:
    """Return a payload as stored: JSON, valid text."""
    return valid_text(json.dumps(payload, ensure_ascii=False))


# The queue: a worker hands the file's entries to the processor.
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
