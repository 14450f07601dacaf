"""One thread, one SQLite connection: every blocking call of the embedded store runs here.

Why one dedicated thread rather than ``asyncio.to_thread`` with a connection per thread:
SQLite lets one writer in at a time anyway, so more threads only add lock waits and
``database is locked`` retries; one connection also keeps the vector cache coherent with
what was written (the cache lives on this thread) and costs one thread on a Raspberry Pi.
Reads take milliseconds, so queueing them behind each other is cheap. At most
``MAX_PENDING`` calls wait for the thread; further callers wait on the event loop, so a
burst never grows an unbounded queue.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ...errors import CorruptionReporter, MemoryStoreError
from .schema import open_database

LOGGER = logging.getLogger(__name__)

MAX_PENDING = 32


class SQLiteWorker:
    """Run functions of the connection on the store's own thread, one at a time."""

    def __init__(self, path: Path, *, max_pending: int = MAX_PENDING) -> None:
        """Prepare to open ``path``; nothing is opened until ``start``."""
        self.path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="companion_memory")
        self._slots = asyncio.Semaphore(max_pending)
        self._db: sqlite3.Connection | None = None
        self._closed = False

    async def start(self, on_corrupt: CorruptionReporter | None = None) -> None:
        """Open the file on the worker thread; report a file that had to be moved aside."""
        moved = await self._submit(self._open)
        if moved is not None and on_corrupt is not None:
            on_corrupt(self.path, moved)

    def _open(self) -> Path | None:
        """Open the database (worker thread) and return where a bad file went, if anywhere."""
        self._db, moved = open_database(self.path)
        return moved

    async def run[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` on the worker thread and return what it returns."""
        return await self._submit(lambda: work(self._connection()))

    async def transaction[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work(connection)`` in one write transaction: all of it or nothing."""

        def wrapped() -> T:
            """Begin, work, commit; roll back on any error."""
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

        return await self._submit(wrapped)

    async def close(self) -> None:
        """Close the connection and let the thread end; later calls raise."""
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close_db)
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
        """Return the open connection (worker thread)."""
        if self._db is None:
            raise MemoryStoreError(f"memory store {self.path} is not open", retryable=False)
        return self._db

    async def _submit[T](self, call: Callable[[], T]) -> T:
        """Queue ``call`` on the thread (bounded) and map SQLite errors to ours."""
        if self._closed:
            raise MemoryStoreError(f"memory store {self.path} is closed", retryable=False)
        async with self._slots:
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(self._executor, call)
            except sqlite3.Error as err:
                retryable = isinstance(err, sqlite3.OperationalError)
                LOGGER.warning("Memory store %s failed: %s", self.path, err)
                raise MemoryStoreError(
                    f"the memory store failed ({type(err).__name__}: {err})", retryable=retryable
                ) from err
            except RuntimeError as err:
                if self._closed:
                    raise MemoryStoreError(
                        f"memory store {self.path} is closed", retryable=False
                    ) from err
                raise
