"""Opening a SQLite file for one thread: WAL, checked by its owner, moved aside when unusable.

Each owner opens its file with its own check and schema (``Prepare``) and its own
durability (``synchronous``). A file the check finds unusable (not SQLite, damaged, someone
else's tables) is moved aside (``<name>.corrupt-<time>``, with its WAL and shared-memory
files) and a fresh one starts; a file that is merely locked or unreadable is no proof of
damage and is left where it is. Connections are in autocommit mode: a write transaction is
``BEGIN IMMEDIATE`` … ``COMMIT`` (``SQLiteWorker.transaction``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from ..errors import CompanionError

LOGGER = logging.getLogger(__name__)

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
