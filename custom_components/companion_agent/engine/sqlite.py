"""The engine's SQLite files: one thread and one connection per file, checked when opened.

Every SQLite file the engine owns (the embedded memory store, the memory outbox, the
exchange store) runs on its own ``SQLiteWorker``: one dedicated thread holds the file's one
connection, and every blocking call on the file runs there. Why one dedicated thread
rather than ``asyncio.to_thread`` with a connection per thread: SQLite lets one writer in
at a time anyway, so more threads only add lock waits and ``database is locked`` retries;
one connection also keeps the vector cache coherent with what was written (the cache lives
on this thread) and costs one thread on a Raspberry Pi. Reads take milliseconds, so
queueing them behind each other is cheap. At most ``MAX_PENDING`` calls wait for the
thread; further callers wait on the event loop, so a burst never grows an unbounded queue.

**Opening.** The file is opened by its owner's ``Opener`` (``open_checked`` with the
owner's check and schema, ``Prepare``, and its own durability, ``synchronous``) on the
first call, or at ``start``. A file the check finds unusable (not SQLite, damaged, someone
else's tables) is moved aside (``move_aside``: ``<name>.corrupt-<time>``, with its WAL and
shared-memory files), reported to ``on_corrupt`` on the event loop, and a fresh one
starts; a file that is merely locked or unreadable is no proof of damage and is left where
it is. Connections are in autocommit mode: a write transaction is ``BEGIN IMMEDIATE`` …
``COMMIT`` (``SQLiteWorker.transaction``). ``reset`` closes the connection and keeps the
thread: the next call opens (and checks) the file again.

A call that fails on SQLite raises the owner's ``Failure`` (``MemoryStoreError`` for the
memory files), retryable when SQLite was merely busy or could not read.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, Protocol

from .errors import CompanionError, CorruptionReporter

LOGGER = logging.getLogger(__name__)

__all__ = [
    "BUSY_TIMEOUT",
    "MAX_PENDING",
    "Failure",
    "Opener",
    "Prepare",
    "SQLiteFileError",
    "SQLiteWorker",
    "Synchronous",
    "check_tables",
    "in_transaction",
    "move_aside",
    "open_checked",
    "quick_check",
]

BUSY_TIMEOUT = 5.0

type Prepare = Callable[[sqlite3.Connection, Path], None]
"""Check a freshly opened file (raise ``sqlite3.DatabaseError`` if unusable), create tables."""
type Synchronous = Literal["NORMAL", "FULL"]
type Opener = Callable[[Path], tuple[sqlite3.Connection, Path | None]]
"""Open a file for the calling thread; return it and where an unusable file went, if anywhere."""


class SQLiteFileError(CompanionError):
    """A SQLite file failed, or is unusable and could not be moved out of the way."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        """Say what failed and whether a retry may help."""
        super().__init__(message)
        self.retryable = retryable


def move_aside(path: Path, err: Exception) -> Path:
    """Move an unusable SQLite file (and its WAL and shared-memory files) out of the way."""
    moved = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            try:
                os.replace(source, Path(f"{moved}{suffix}"))
            except OSError as move_err:
                raise SQLiteFileError(
                    f"{path} is unusable ({err}) and cannot be moved aside ({move_err})"
                ) from move_err
    LOGGER.warning("File %s is unusable (%s); moved to %s", path, err, moved)
    return moved


def open_checked(
    path: Path, prepare: Prepare, *, synchronous: Synchronous
) -> tuple[sqlite3.Connection, Path | None]:
    """Open (or create) ``path`` for the calling thread; move an unusable file aside first.

    Returns the connection, and where the unusable file went (None when it was fine or new).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return _connect(path, prepare, synchronous), None
    except sqlite3.DatabaseError as err:
        if isinstance(err, sqlite3.OperationalError) and path.exists():
            raise  # locked or unreadable: not proof of damage, leave it
        moved = move_aside(path, err)
    return _connect(path, prepare, synchronous), moved


def _connect(path: Path, prepare: Prepare, synchronous: Synchronous) -> sqlite3.Connection:
    """Connect in WAL mode with ``synchronous``, then let ``prepare`` check and set up."""
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(f"PRAGMA synchronous = {synchronous}")
        prepare(connection, path)
    except BaseException:
        connection.close()
        raise
    return connection


def quick_check(connection: sqlite3.Connection) -> None:
    """Raise ``sqlite3.DatabaseError`` unless SQLite's own quick check finds the file sound."""
    check = connection.execute("PRAGMA quick_check").fetchone()
    if check is None or check[0] != "ok":
        raise sqlite3.DatabaseError(f"quick_check: {check[0] if check else 'no answer'}")


def check_tables(connection: sqlite3.Connection, tables: frozenset[str], what: str) -> None:
    """Raise ``sqlite3.DatabaseError`` unless the file is sound and empty or holds ``tables``.

    ``what`` names the kind of file in the error ("a memory outbox").
    """
    quick_check(connection)
    rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
    names = {row[0] for row in rows}
    if names - {"sqlite_sequence"} and not names >= tables:
        raise sqlite3.DatabaseError(f"a SQLite file, but not {what}")


# The worker: one thread, one connection.
MAX_PENDING = 32


class Failure(Protocol):
    """Build the error a failed call raises: what failed, and whether a retry may help."""

    def __call__(self, message: str, *, retryable: bool) -> Exception:
        """Return the error to raise."""
        ...


def in_transaction[T](db: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``work(db)`` in one write transaction (the calling thread's connection)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        result = work(db)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return result


class SQLiteWorker:
    """Run functions of the connection on the file's own thread, one at a time."""

    def __init__(
        self,
        path: Path,
        *,
        opener: Opener,
        failure: Failure = SQLiteFileError,
        max_pending: int = MAX_PENDING,
        on_corrupt: CorruptionReporter | None = None,
    ) -> None:
        """Prepare to open ``path`` with ``opener``; nothing is opened until the first call."""
        self.path = path
        self.on_corrupt = on_corrupt
        self._opener = opener
        self._failure = failure
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"companion {path.name}"
        )
        self._slots = asyncio.Semaphore(max_pending)
        self._db: sqlite3.Connection | None = None
        self._moved: Path | None = None
        self._closed = False

    async def start(self, on_corrupt: CorruptionReporter | None = None) -> None:
        """Open the file now; report a file that had to be moved aside."""
        if on_corrupt is not None:
            self.on_corrupt = on_corrupt
        await self._submit(self._connection)

    async def run[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` on the worker thread and return what it returns."""
        return await self._submit(lambda: work(self._connection()))

    async def transaction[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` in one write transaction: all of it or nothing."""
        return await self._submit(lambda: in_transaction(self._connection(), work))

    async def reset(self) -> None:
        """Close the connection but keep the thread: the next call opens the file again."""
        await self._submit(self._close_db)

    async def close(self) -> None:
        """Close the connection and let the thread end; later calls raise."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        try:
            # Shielded: a cancelled close still closes the connection on its own thread.
            await asyncio.shield(loop.run_in_executor(self._executor, self._close_db))
        finally:
            # The thread has just run the last job queued (later calls are refused), so it
            # is idle: joining it returns at once and leaves no thread behind.
            self._executor.shutdown(wait=True)

    def _close_db(self) -> None:
        """Close the connection (worker thread)."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connection(self) -> sqlite3.Connection:
        """Return the open connection, opening the file first if need be (worker thread)."""
        if self._db is None:
            self._db, moved = self._opener(self.path)
            self._moved = moved or self._moved
        return self._db

    async def _submit[T](self, call: Callable[[], T]) -> T:
        """Queue ``call`` on the thread (bounded), map SQLite errors, report a moved file."""
        if self._closed:
            raise self._failure(f"file {self.path} is closed", retryable=False)
        async with self._slots:
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(self._executor, call)
            except sqlite3.Error as err:
                retryable = isinstance(err, sqlite3.OperationalError)
                LOGGER.warning("File %s failed: %s", self.path, err)
                raise self._failure(
                    f"{self.path.name} failed ({type(err).__name__}: {err})", retryable=retryable
                ) from err
            except SQLiteFileError as err:  # unusable, and it could not be moved aside
                raise self._failure(str(err), retryable=False) from err
            except RuntimeError as err:
                if self._closed:
                    raise self._failure(f"file {self.path} is closed", retryable=False) from err
                raise
            finally:
                self._report_moved()

    def _report_moved(self) -> None:
        """Tell ``on_corrupt`` (once) where an unusable file went (event loop)."""
        moved, self._moved = self._moved, None
        if moved is not None and self.on_corrupt is not None:
            self.on_corrupt(self.path, moved)
