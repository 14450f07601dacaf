"""The outbox's SQLite file: waiting entries and the ones set aside, bounded (blocking calls).

Every call here blocks (the outbox runs them in a thread) and takes the file's lock. A
file that is not a sound outbox when it is opened (not SQLite, damaged, someone else's
tables) is moved aside (``<name>.corrupt-<time>``, with its WAL) and a fresh one starts;
``moved`` says where it went, so the owner can report it. Both tables are bounded: past
``max_entries`` a put is refused; past ``max_aside`` the oldest set-aside entries go.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..chars import valid_text
from ..json_types import JSONObject
from .sqlite.schema import move_aside

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
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxEntry:
    """One waiting write: what kind it is, its JSON payload, how often it failed."""

    id: int
    kind: str
    payload: JSONObject
    attempts: int = 0


class OutboxFile:
    """The outbox's SQLite file (``synchronous=FULL``: a put is on disk when it returns)."""

    def __init__(
        self, path: Path, *, max_entries: int = MAX_ENTRIES, max_aside: int = MAX_ASIDE
    ) -> None:
        """Keep the queue in ``path``; nothing is opened until the first call."""
        self.path = path
        self.moved: Path | None = None
        """Where an unusable file went (set once; the owner reports and clears it)."""
        self._max_entries = max_entries
        self._max_aside = max_aside
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def put(self, rows: Sequence[tuple[str, JSONObject]]) -> bool:
        """Insert entries in one transaction unless that overfills the queue."""
        with self._lock:
            db = self._connection()
            (waiting,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            if waiting + len(rows) > self._max_entries:
                return False
            with db:
                _insert(db, rows)
            return True

    def peek(
        self, limit: int, after: int = 0, skip: frozenset[str] = frozenset()
    ) -> list[OutboxEntry]:
        """Read the oldest entries after id ``after`` not of a ``skip`` kind (bad ones go aside)."""
        with self._lock:
            db = self._connection()
            marks = ",".join("?" * len(skip))
            rows = db.execute(
                "SELECT id, kind, payload, attempts FROM entries"
                f" WHERE id > ? AND kind NOT IN ({marks}) ORDER BY id LIMIT ?",
                (after, *sorted(skip), limit),
            ).fetchall()
            entries: list[OutboxEntry] = []
            for row_id, kind, payload, attempts in rows:
                try:
                    data = json.loads(payload)
                except ValueError as err:
                    data = f"unreadable: {err}"
                if not isinstance(data, dict):
                    with db:
                        self._set_aside(db, row_id, str(data)[:300])
                    continue
                entries.append(
                    OutboxEntry(
                        id=row_id, kind=kind, payload=cast(JSONObject, data), attempts=attempts
                    )
                )
            return entries

    def settle(self, entry_id: int, follow: Sequence[tuple[str, JSONObject]]) -> None:
        """Remove a processed entry and add its follow-ups, in one transaction."""
        with self._lock:
            db = self._connection()
            with db:
                db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
                _insert(db, follow)

    def count_failures(
        self, failed: Sequence[tuple[OutboxEntry, str]], max_attempts: int
    ) -> list[OutboxEntry]:
        """Count one try for each failed entry; set aside (and return) those out of tries."""
        out: list[OutboxEntry] = []
        with self._lock:
            db = self._connection()
            with db:
                for entry, reason in failed:
                    db.execute(
                        "UPDATE entries SET attempts = attempts + 1 WHERE id = ?", (entry.id,)
                    )
                    if entry.attempts + 1 >= max_attempts:
                        self._set_aside(db, entry.id, reason)
                        out.append(entry)
        return out

    def drop(self, matches: Callable[[OutboxEntry], bool]) -> int:
        """Delete the waiting entries ``matches`` picks (unreadable ones stay); return how many."""
        with self._lock:
            db = self._connection()
            gone: list[tuple[int]] = []
            for row_id, kind, payload, attempts in db.execute(
                "SELECT id, kind, payload, attempts FROM entries"
            ).fetchall():
                try:
                    data = json.loads(payload)
                    entry = OutboxEntry(id=row_id, kind=kind, payload=data, attempts=attempts)
                    if isinstance(data, dict) and matches(entry):
                        gone.append((row_id,))
                except (ValueError, KeyError, TypeError):
                    continue
            with db:
                db.executemany("DELETE FROM entries WHERE id = ?", gone)
            return len(gone)

    def counts(self) -> tuple[int, int]:
        """Return the waiting and the set-aside entries."""
        with self._lock:
            db = self._connection()
            (waiting,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            (aside,) = db.execute("SELECT COUNT(*) FROM aside").fetchone()
            return int(waiting), int(aside)

    def close(self) -> None:
        """Close the file (the next call opens it again)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _connection(self) -> sqlite3.Connection:
        """Return the open file; open (and check) it, or move it aside, the first time."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = _open_checked(self.path)
            except sqlite3.DatabaseError as err:
                if isinstance(err, sqlite3.OperationalError) and self.path.exists():
                    raise  # locked or unreadable: not proof of damage, leave it
                self.moved = move_aside(self.path, err)
                self._db = _open_checked(self.path)
        return self._db

    def _set_aside(self, db: sqlite3.Connection, entry_id: int, reason: str) -> None:
        """Move one entry to the aside table, dropping the oldest beyond ``max_aside``."""
        db.execute(
            "INSERT OR REPLACE INTO aside (id, kind, payload, attempts, created, reason)"
            " SELECT id, kind, payload, attempts, created, ? FROM entries WHERE id = ?",
            (reason, entry_id),
        )
        db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
        db.execute(
            "DELETE FROM aside WHERE id NOT IN (SELECT id FROM aside ORDER BY id DESC LIMIT ?)",
            (self._max_aside,),
        )


def _open_checked(path: Path) -> sqlite3.Connection:
    """Connect, check the file is sound and an outbox (or empty), create the tables."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level="IMMEDIATE")
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        _check(db)
        for statement in _SCHEMA:
            db.execute(statement)
    except BaseException:
        db.close()
        raise
    return db


def _check(db: sqlite3.Connection) -> None:
    """Raise ``sqlite3.DatabaseError`` unless the file is sound and empty or an outbox."""
    (check,) = db.execute("PRAGMA quick_check").fetchone()
    if check != "ok":
        raise sqlite3.DatabaseError(f"quick_check: {check}")
    names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if names - {"sqlite_sequence"} and not names >= _TABLES:
        raise sqlite3.DatabaseError("a SQLite file, but not a memory outbox")


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
