"""The outbox's SQLite file: waiting entries, the ones set aside, and tombstones (blocking).

Every call here blocks (the outbox runs them in a thread) and takes the file's lock. A
file that is not a sound outbox when it is opened is moved aside (``sqlite_file``) and a
fresh one starts; ``moved`` says where it went, so the owner can report it. Both entry
tables are bounded: past ``max_entries`` a put is refused; past ``max_aside`` the oldest
set-aside entries go.

Forget wins here too: ``forget`` keeps a tombstone and deletes the waiting entries it
covers in one transaction, and ``put`` and ``settle`` (an entry's follow-ups) pass every
new entry through the ``screen`` against the tombstones in their own transaction, so an
extraction that was still running when the forget came never lands its memories.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..chars import valid_text
from ..json_types import JSONObject
from ..sqlite_file import SQLiteFile
from .tombstones import Tombstone, dump_tombstone, load_tombstone

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


class OutboxFile(SQLiteFile):
    """The outbox's SQLite file (``synchronous=FULL``: a put is on disk when it returns)."""

    def __init__(
        self,
        path: Path,
        *,
        max_entries: int = MAX_ENTRIES,
        max_aside: int = MAX_ASIDE,
        screen: Screen = no_screen,
    ) -> None:
        """Keep the queue in ``path``; nothing is opened until the first call."""
        super().__init__(path, tables=_TABLES, schema=_SCHEMA)
        self.screen = screen
        self.forgotten = 0
        """How many entries tombstones refused (put, follow-ups or dropped by a forget)."""
        self._max_entries = max_entries
        self._max_aside = max_aside
        self._tombstones: list[Tombstone] = []

    def opened(self, db: sqlite3.Connection) -> None:
        """Read the tombstones the file keeps (one that cannot be read is left out)."""
        self._tombstones = []
        for (raw,) in db.execute("SELECT tombstone FROM forgotten ORDER BY id"):
            try:
                self._tombstones.append(load_tombstone(json.loads(raw)))
            except (ValueError, TypeError):
                continue

    def tombstones(self) -> list[Tombstone]:
        """Return the tombstones the file keeps, oldest first."""
        with self.lock:
            self.connection()
            return list(self._tombstones)

    def put(self, rows: Sequence[tuple[str, JSONObject]]) -> bool:
        """Insert entries (less what tombstones refuse) in one transaction unless that overfills."""
        with self.lock:
            db = self.connection()
            (waiting,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            if waiting + len(rows) > self._max_entries:
                return False
            with db:
                self._insert(db, rows)
            return True

    def forget(self, tombstone: Tombstone) -> int:
        """Keep ``tombstone`` and screen every waiting entry by it, in one transaction.

        Return how many entries went whole (an entry part of which is refused is rewritten).
        """
        with self.lock:
            db = self.connection()
            gone = 0
            with db:
                db.execute(
                    "INSERT INTO forgotten (tombstone) VALUES (?)",
                    (json.dumps(dump_tombstone(tombstone)),),
                )
                for row_id, kind, raw in db.execute(
                    "SELECT id, kind, payload FROM entries"
                ).fetchall():
                    payload = _object(raw)
                    if payload is None:
                        continue
                    kept = self.screen(kind, payload, (tombstone,))
                    if kept is None:
                        db.execute("DELETE FROM entries WHERE id = ?", (row_id,))
                        gone += 1
                    elif kept != payload:
                        db.execute(
                            "UPDATE entries SET payload = ? WHERE id = ?", (_dumped(kept), row_id)
                        )
            self._tombstones.append(tombstone)
            self.forgotten += gone
            return gone

    def peek(
        self, limit: int, after: int = 0, skip: frozenset[str] = frozenset()
    ) -> list[OutboxEntry]:
        """Read the oldest entries after id ``after`` not of a ``skip`` kind (bad ones go aside)."""
        with self.lock:
            db = self.connection()
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
                    with db:
                        self._set_aside(db, row_id, f"unreadable: {payload[:200]}")
                    continue
                entries.append(OutboxEntry(id=row_id, kind=kind, payload=data, attempts=attempts))
            return entries

    def settle(self, entry_id: int, follow: Sequence[tuple[str, JSONObject]]) -> None:
        """Remove a processed entry and add its follow-ups (less what is refused), in one go."""
        with self.lock:
            db = self.connection()
            with db:
                db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
                self._insert(db, follow)

    def count_failures(
        self, failed: Sequence[tuple[OutboxEntry, str]], max_attempts: int
    ) -> list[OutboxEntry]:
        """Count one try for each failed entry; set aside (and return) those out of tries."""
        out: list[OutboxEntry] = []
        with self.lock:
            db = self.connection()
            with db:
                for entry, reason in failed:
                    db.execute(
                        "UPDATE entries SET attempts = attempts + 1 WHERE id = ?", (entry.id,)
                    )
                    if entry.attempts + 1 >= max_attempts:
                        self._set_aside(db, entry.id, reason)
                        out.append(entry)
        return out

    def counts(self) -> tuple[int, int]:
        """Return the waiting and the set-aside entries."""
        with self.lock:
            db = self.connection()
            (waiting,) = db.execute("SELECT COUNT(*) FROM entries").fetchone()
            (aside,) = db.execute("SELECT COUNT(*) FROM aside").fetchone()
            return int(waiting), int(aside)

    def _insert(self, db: sqlite3.Connection, rows: Sequence[tuple[str, JSONObject]]) -> None:
        """Insert entries the tombstones leave something of (inside a transaction)."""
        now = time.time()
        kept: list[tuple[str, str, float]] = []
        for kind, payload in rows:
            screened = self.screen(kind, payload, self._tombstones)
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
        db.execute(
            "DELETE FROM aside WHERE id NOT IN (SELECT id FROM aside ORDER BY id DESC LIMIT ?)",
            (self._max_aside,),
        )


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
