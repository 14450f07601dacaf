"""The exchange store's SQLite file: one row per exchange, read as two views (blocking).

Each row is one stored turn of one persona, keyed by its conversation (a hash of the id,
as the old files were named) and by its owner (a hash of ``user:<id>`` or ``household``),
``windowed`` when it belongs to the owner's recent window. The conversation view is the
conversation's last ``max_turns`` rows, the window view the owner's last
``MAX_WINDOW_TURNS`` windowed rows (one more is read, to hand what fell out to the
summaries); a row outside both is deleted as the next one is written. Forget and retention
apply once, to the rows: ``forgotten`` keeps a tombstone per persona and/or owner, and a
turn that began at or before one is never written.

Upgrading: the first time the file is opened, the JSON files of before
(``conversations/<persona>/<hash>.json``, ``recent/<persona>/<hash>.json``) are read into it
(a turn found in both, by its trace id, becomes one row) and deleted; a file that is not a
history is moved aside and reported, as before.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..chars import valid_text
from ..events import TurnOutcome
from ..sqlite_file import SQLiteFile
from .stored import StoredTurn, dump_turn, interrupted_at, parse_turn, parse_turns

LOGGER = logging.getLogger(__name__)

MAX_TURNS = 20
MAX_WINDOW_TURNS = 40
_TABLES = frozenset({"exchanges", "forgotten"})
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS exchanges (rowid INTEGER PRIMARY KEY, persona TEXT NOT NULL,"
    " conversation TEXT, owner TEXT, windowed INTEGER NOT NULL DEFAULT 0, began REAL NOT NULL,"
    " time REAL NOT NULL, trace_id TEXT NOT NULL DEFAULT '', turn TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS exchanges_conversation ON exchanges (persona, conversation, time)",
    "CREATE INDEX IF NOT EXISTS exchanges_window ON exchanges (persona, owner, windowed, time)",
    "CREATE INDEX IF NOT EXISTS exchanges_trace ON exchanges (persona, trace_id)",
    "CREATE TABLE IF NOT EXISTS forgotten (persona TEXT NOT NULL DEFAULT '',"
    " owner TEXT NOT NULL DEFAULT '', at REAL NOT NULL, PRIMARY KEY (persona, owner))",
)
_NEWEST = "ORDER BY time DESC, rowid DESC LIMIT ?"


@dataclass(frozen=True, slots=True, kw_only=True)
class LegacyFolders:
    """Where the JSON histories of before live: conversations and recent windows."""

    conversations: Path
    windows: Path


class ExchangeFile(SQLiteFile):
    """The exchanges of every persona in one SQLite file (each call blocks, under the lock)."""

    def __init__(
        self, path: Path, *, legacy: LegacyFolders | None = None, max_turns: int = MAX_TURNS
    ) -> None:
        """Keep exchanges in ``path``; read the old files in ``legacy`` at the first open."""
        super().__init__(path, tables=_TABLES, schema=_SCHEMA)
        self.legacy = legacy
        self.legacy_moved: list[tuple[Path, Path]] = []
        """Old files that were not histories: where each went (the owner reports them)."""
        self._max_turns = max_turns

    def opened(self, db: sqlite3.Connection) -> None:
        """Read the old JSON histories in, once, and delete them."""
        if self.legacy is None:
            return
        for folder, windowed in ((self.legacy.conversations, False), (self.legacy.windows, True)):
            for path in sorted(folder.glob("*/*.json")) if folder.is_dir() else ():
                turns = self._legacy_turns(path)
                if turns is not None:
                    with db:
                        _import(db, path.parent.name, path.stem, turns, windowed=windowed)
                    path.unlink(missing_ok=True)

    def append(
        self, persona: str, conversation: str, owner: str | None, windowed: bool, turn: StoredTurn
    ) -> bool:
        """Write one exchange unless a tombstone refuses it; keep both views bounded."""
        began = turn.began or turn.time
        with self.lock:
            db = self.connection()
            with db:
                if _refused(db, persona, owner, began):
                    return False
                db.execute(
                    "INSERT INTO exchanges (persona, conversation, owner, windowed, began, time,"
                    " trace_id, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (persona, conversation, owner, int(windowed), began, turn.time,
                     turn.trace_id, _dumped(turn)),
                )  # fmt: skip
                self._bound(db, persona, conversation, owner if windowed else None)
            return True

    def conversation(self, persona: str, conversation: str) -> list[StoredTurn]:
        """Return a conversation's last turns, oldest first."""
        return self._view(
            "persona = ? AND conversation = ?", (persona, conversation), self._max_turns
        )

    def window(self, persona: str, owner: str, limit: int) -> list[StoredTurn]:
        """Return an owner's last ``limit`` windowed turns, oldest first."""
        return self._view("persona = ? AND owner = ? AND windowed", (persona, owner), limit)

    def amend(
        self, persona: str, conversation: str, trace_id: str, heard: str, outcome: TurnOutcome
    ) -> bool:
        """Mark the conversation's latest turn ``trace_id`` ``outcome``, cut to ``heard``."""
        with self.lock:
            db = self.connection()
            row = db.execute(
                "SELECT rowid, turn FROM exchanges WHERE persona = ? AND conversation = ? "
                "AND trace_id = ? AND trace_id != '' ORDER BY time DESC, rowid DESC LIMIT 1",
                (persona, conversation, trace_id),
            ).fetchone()
            if row is None:
                return False
            turn = interrupted_at(parse_turn(json.loads(row[1])), heard, outcome)
            with db:
                db.execute("UPDATE exchanges SET turn = ? WHERE rowid = ?", (_dumped(turn), row[0]))
            return True

    def forget(self, persona: str | None, owner: str | None, at: float) -> int:
        """Keep a tombstone and delete the exchanges of a persona and/or owner begun by ``at``."""
        parts = [f"{name} = ?" for name, value in (("persona", persona), ("owner", owner)) if value]
        values = [value for value in (persona, owner) if value]
        with self.lock:
            db = self.connection()
            with db:
                db.execute(
                    "INSERT INTO forgotten (persona, owner, at) VALUES (?, ?, ?) "
                    "ON CONFLICT DO UPDATE SET at = max(at, excluded.at)",
                    (persona or "", owner or "", at),
                )
                where = " AND ".join([*parts, "began <= ?"])
                gone = db.execute(f"DELETE FROM exchanges WHERE {where}", (*values, at)).rowcount
            return int(gone)

    def prune(self, cutoff: float) -> int:
        """Delete the exchanges whose conversation and window nobody spoke in since ``cutoff``."""
        with self.lock:
            db = self.connection()
            with db:
                gone = db.execute(
                    "DELETE FROM exchanges WHERE rowid IN (SELECT e.rowid FROM exchanges e WHERE"
                    " (e.conversation IS NULL OR (SELECT max(c.time) FROM exchanges c"
                    "  WHERE c.persona = e.persona AND c.conversation = e.conversation) < :cut)"
                    " AND (NOT e.windowed OR (SELECT max(w.time) FROM exchanges w"
                    "  WHERE w.persona = e.persona AND w.owner = e.owner AND w.windowed) < :cut))",
                    {"cut": cutoff},
                ).rowcount
        return int(gone) + self._prune_legacy(cutoff)

    def _prune_legacy(self, cutoff: float) -> int:
        """Delete old files left (moved aside) in the old folders, written before ``cutoff``."""
        removed = 0
        folders = (self.legacy.conversations, self.legacy.windows) if self.legacy else ()
        for folder in folders:
            for path in folder.glob("*/*.json*") if folder.is_dir() else ():
                try:
                    if path.is_file() and path.stat().st_mtime < cutoff:
                        path.unlink()
                        removed += 1
                except OSError as err:
                    LOGGER.warning("Cannot prune %s: %s", path, err)
        return removed

    def counts(self) -> dict[str, int]:
        """Return how many conversations each persona holds."""
        with self.lock:
            rows = self.connection().execute(
                "SELECT persona, count(DISTINCT conversation) FROM exchanges GROUP BY persona"
            )
            return {str(persona): int(number) for persona, number in rows}

    def _view(self, where: str, params: Sequence[object], limit: int) -> list[StoredTurn]:
        """Return the newest ``limit`` rows of a view as turns, oldest first."""
        with self.lock:
            rows = self.connection().execute(
                f"SELECT turn FROM exchanges WHERE {where} {_NEWEST}", (*params, limit)
            )
            turns: list[StoredTurn] = []
            for (raw,) in rows.fetchall():
                try:
                    turns.append(parse_turn(json.loads(raw)))
                except (ValueError, TypeError, KeyError, AttributeError) as err:
                    LOGGER.warning("An exchange in %s is unreadable (%s); left out", self.path, err)
            turns.reverse()
            return turns

    def _bound(
        self, db: sqlite3.Connection, persona: str, conversation: str, owner: str | None
    ) -> None:
        """Delete the rows that fell out of this conversation's view and this window's."""
        window = (
            "rowid IN (SELECT rowid FROM exchanges w WHERE w.persona = e.persona AND w.owner ="
            f" e.owner AND w.windowed ORDER BY time DESC, rowid DESC LIMIT {MAX_WINDOW_TURNS + 1})"
        )
        talk = (
            "rowid IN (SELECT rowid FROM exchanges c WHERE c.persona = e.persona AND c.conversation"
            f" = e.conversation ORDER BY time DESC, rowid DESC LIMIT {self._max_turns})"
        )
        keep = f"(e.windowed AND e.{window}) OR (e.conversation IS NOT NULL AND e.{talk})"
        db.execute(
            f"DELETE FROM exchanges WHERE rowid IN (SELECT e.rowid FROM exchanges e WHERE "
            f"e.persona = ? AND (e.conversation = ? OR (e.windowed AND e.owner = ?)) "
            f"AND NOT ({keep}))",
            (persona, conversation, owner),
        )

    def _legacy_turns(self, path: Path) -> list[StoredTurn] | None:
        """Read an old history file; move one that is not a history aside (None)."""
        try:
            return parse_turns(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
            moved = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
            try:
                os.replace(path, moved)
            except OSError:
                moved = path
            LOGGER.warning("Conversation file %s is unusable (%s); moved to %s", path, err, moved)
            self.legacy_moved.append((path, moved))
            return None


def _refused(db: sqlite3.Connection, persona: str, owner: str | None, began: float) -> bool:
    """Say whether a tombstone of the persona and/or owner refuses a turn begun at ``began``."""
    row = db.execute(
        "SELECT 1 FROM forgotten WHERE persona IN ('', ?) AND owner IN ('', ?) AND at >= ? LIMIT 1",
        (persona, owner or "", began),
    ).fetchone()
    return row is not None


def _import(
    db: sqlite3.Connection, persona: str, key: str, turns: Sequence[StoredTurn], *, windowed: bool
) -> None:
    """Add an old file's turns (a conversation's, or an owner's window), once."""
    column = "owner" if windowed else "conversation"
    if db.execute(
        f"SELECT 1 FROM exchanges WHERE persona = ? AND {column} = ? LIMIT 1", (persona, key)
    ).fetchone():
        return  # read in before, and the file was not deleted then
    for turn in turns:
        if windowed and turn.trace_id:
            joined = db.execute(
                "UPDATE exchanges SET owner = ?, windowed = 1 WHERE persona = ? AND trace_id = ?"
                " AND owner IS NULL",
                (key, persona, turn.trace_id),
            ).rowcount
            if joined:
                continue
        db.execute(
            "INSERT INTO exchanges (persona, conversation, owner, windowed, began, time,"
            " trace_id, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (persona, None if windowed else key, key if windowed else None, int(windowed),
             turn.began or turn.time, turn.time, turn.trace_id, _dumped(turn)),
        )  # fmt: skip


def _dumped(turn: StoredTurn) -> str:
    """Return a turn as stored: JSON, valid text."""
    return valid_text(json.dumps(dump_turn(turn), ensure_ascii=False))
