"""A SQLite file the engine owns: opened on first use, checked, moved aside when it is not ours.

``SQLiteFile`` holds one connection behind a lock (its methods block: callers run them in a
thread). The first call opens the file, runs ``PRAGMA quick_check`` and makes sure it is
empty or holds the expected tables; a file that is not SQLite, is damaged or is someone
else's is moved aside (``<name>.corrupt-<time>``, with its WAL and shared-memory files) and
a fresh one starts; ``moved`` says where it went, so the owner can report it. A file that is
locked or cannot be read is left where it is (that is no proof of damage).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from .errors import CompanionError

LOGGER = logging.getLogger(__name__)


class SQLiteFileError(CompanionError):
    """A SQLite file is unusable and could not be moved out of the way."""


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


class SQLiteFile:
    """One SQLite file with its tables, opened (and checked) by the first call, behind a lock."""

    def __init__(
        self,
        path: Path,
        *,
        tables: frozenset[str],
        schema: Sequence[str],
        synchronous: str = "FULL",
    ) -> None:
        """Keep ``path``; ``tables`` make it ours, ``schema`` creates (or extends) them."""
        self.path = path
        self.moved: Path | None = None
        """Where an unusable file went (set once; the owner reports and clears it)."""
        self._tables = tables
        self._schema = tuple(schema)
        self._synchronous = synchronous
        self._db: sqlite3.Connection | None = None
        self.lock = threading.Lock()

    def close(self) -> None:
        """Close the file (the next call opens it again)."""
        with self.lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def connection(self) -> sqlite3.Connection:
        """Return the open file (hold ``lock``); open it, or move it aside, the first time."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = self._open_checked()
            except sqlite3.DatabaseError as err:
                if isinstance(err, sqlite3.OperationalError) and self.path.exists():
                    raise  # locked or unreadable: not proof of damage, leave it
                self.moved = move_aside(self.path, err)
                self._db = self._open_checked()
            self.opened(self._db)
        return self._db

    def opened(self, db: sqlite3.Connection) -> None:
        """Do what a freshly opened file needs (nothing here; subclasses migrate)."""

    def _open_checked(self) -> sqlite3.Connection:
        """Connect, check the file is sound and ours (or empty), create the tables."""
        db = sqlite3.connect(
            self.path, timeout=5.0, check_same_thread=False, isolation_level="IMMEDIATE"
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self._synchronous}")
            self._check(db)
            for statement in self._schema:
                db.execute(statement)
            db.commit()
        except BaseException:
            db.close()
            raise
        return db

    def _check(self, db: sqlite3.Connection) -> None:
        """Raise ``sqlite3.DatabaseError`` unless the file is sound and empty or ours."""
        (check,) = db.execute("PRAGMA quick_check").fetchone()
        if check != "ok":
            raise sqlite3.DatabaseError(f"quick_check: {check}")
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if names - {"sqlite_sequence"} and not names >= self._tables:
            raise sqlite3.DatabaseError("a SQLite file, but not one of ours")
