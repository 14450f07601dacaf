"""The exchange store's SQLite file: one row per exchange, read as two views.

Each row is one stored turn of one persona, keyed by its conversation (a hash of the id,
as the old files were named) and by its owner (a hash of ``user:<id>`` or ``household``),
``windowed`` when it belongs to the owner's recent window. The conversation view is the
conversation's last ``max_turns`` rows, the window view the owner's last
``MAX_WINDOW_TURNS`` windowed rows (one more is read, to hand what fell out to the
summaries); a row outside both is deleted as the next one is written. Forget and retention
apply once, to the rows: ``forgotten`` keeps a tombstone per persona and/or owner, and a
turn that began at or before one is never written; ``forgotten_turns`` keeps one per turn
forgotten alone (by its trace id: a statement whose memory was forgotten), the newest
``MAX_FORGOTTEN_TURNS``, and that turn is never written either.

The file runs on its own thread (``SQLiteWorker``); every write is one transaction. The
first time it is opened, the JSON files of before are read into it (``exchange_legacy``).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import CorruptionReporter
from ..events import TurnOutcome
from ..sqlite import SQLiteWorker, check_tables, in_transaction, open_checked
from .exchange_legacy import LegacyFolders, dumped, prune_legacy, read_legacy
from .stored import StoredTurn, interrupted_at, parse_turn

LOGGER = logging.getLogger(__name__)

MAX_TURNS = 20
MAX_WINDOW_TURNS = 40
MAX_FORGOTTEN_TURNS = 10_000
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
    "CREATE TABLE IF NOT EXISTS forgotten_turns (persona TEXT NOT NULL, trace_id TEXT NOT NULL,"
    " at REAL NOT NULL, PRIMARY KEY (persona, trace_id))",
)
_NEWEST = "ORDER BY time DESC, rowid DESC LIMIT ?"


def _prepare(db: sqlite3.Connection, path: Path) -> None:
    """Check the file is sound and empty or a store of exchanges; create the tables."""
    check_tables(db, _TABLES, "a store of exchanges")
    for statement in _SCHEMA:
        db.execute(statement)


class ExchangeFile:
    """The exchanges of every persona in one SQLite file, on the file's own thread."""

    def __init__(
        self,
        path: Path,
        *,
        legacy: LegacyFolders | None = None,
        max_turns: int = MAX_TURNS,
        on_corrupt: CorruptionReporter | None = None,
    ) -> None:
        """Keep exchanges in ``path``; read the old files in ``legacy`` at the first open."""
        self.path = path
        self.legacy = legacy
        self._max_turns = max_turns
        self._on_corrupt = on_corrupt
        self._legacy_moved: list[tuple[Path, Path]] = []
        """Old files that were not histories, and where each went (reported after the call)."""
        self._worker = SQLiteWorker(path, opener=self._open, on_corrupt=on_corrupt)

    async def append(
        self, persona: str, conversation: str, owner: str | None, windowed: bool, turn: StoredTurn
    ) -> bool:
        """Write one exchange unless a tombstone refuses it; keep both views bounded."""
        began = turn.began or turn.time

        def write(db: sqlite3.Connection) -> bool:
            """Insert the row and drop what fell out of its views, unless refused."""
            if _refused(db, persona, owner, began) or _forgotten_turn(db, persona, turn.trace_id):
                return False
            db.execute(
                "INSERT INTO exchanges (persona, conversation, owner, windowed, began, time,"
                " trace_id, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (persona, conversation, owner, int(windowed), began, turn.time,
                 turn.trace_id, dumped(turn)),
            )  # fmt: skip
            self._bound(db, persona, conversation, owner if windowed else None)
            return True

        return await self._call(write, write=True)

    async def conversation(self, persona: str, conversation: str) -> list[StoredTurn]:
        """Return a conversation's last turns, oldest first."""
        return await self._view(
            "persona = ? AND conversation = ?", (persona, conversation), self._max_turns
        )

    async def window(self, persona: str, owner: str, limit: int) -> list[StoredTurn]:
        """Return an owner's last ``limit`` windowed turns, oldest first."""
        return await self._view("persona = ? AND owner = ? AND windowed", (persona, owner), limit)

    async def amend(
        self, persona: str, conversation: str, trace_id: str, heard: str, outcome: TurnOutcome
    ) -> bool:
        """Mark the conversation's latest turn ``trace_id`` ``outcome``, cut to ``heard``."""

        def write(db: sqlite3.Connection) -> bool:
            """Rewrite the turn's row, if there is one."""
            row = db.execute(
                "SELECT rowid, turn FROM exchanges WHERE persona = ? AND conversation = ? "
                "AND trace_id = ? AND trace_id != '' ORDER BY time DESC, rowid DESC LIMIT 1",
                (persona, conversation, trace_id),
            ).fetchone()
            if row is None:
                return False
            turn = interrupted_at(parse_turn(json.loads(row[1])), heard, outcome)
            db.execute("UPDATE exchanges SET turn = ? WHERE rowid = ?", (dumped(turn), row[0]))
            return True

        return await self._call(write, write=True)

    async def reassign(
        self,
        persona: str,
        conversation: str,
        owner: str,
        to: str,
        skip: Callable[[StoredTurn], bool],
    ) -> StoredTurn | None:
        """Give the conversation's newest turn of ``owner`` (but those ``skip`` passes) to ``to``.

        It keeps its place in a window (now ``to``'s). Return the turn, or None when the
        conversation holds none of ``owner``'s (among its last ``MAX_TURNS``).
        """

        def write(db: sqlite3.Connection) -> StoredTurn | None:
            """Find the row and change its owner, in one transaction."""
            rows = db.execute(
                "SELECT rowid, owner, windowed, turn FROM exchanges WHERE persona = ? AND "
                f"conversation = ? {_NEWEST}",
                (persona, conversation, self._max_turns),
            ).fetchall()
            for rowid, held_by, windowed, raw in rows:
                if held_by != owner:
                    continue
                try:
                    turn = parse_turn(json.loads(raw))
                except (ValueError, TypeError, KeyError, AttributeError):
                    continue
                if skip(turn):
                    continue
                db.execute("UPDATE exchanges SET owner = ? WHERE rowid = ?", (to, rowid))
                self._bound(db, persona, conversation, to if windowed else None)
                return turn
            return None

        return await self._call(write, write=True)

    async def forget(self, persona: str | None, owner: str | None, at: float) -> int:
        """Keep a tombstone and delete the exchanges of a persona and/or owner begun by ``at``."""
        parts = [f"{name} = ?" for name, value in (("persona", persona), ("owner", owner)) if value]
        values = [value for value in (persona, owner) if value]

        def write(db: sqlite3.Connection) -> int:
            """Keep the tombstone and delete, in one transaction."""
            db.execute(
                "INSERT INTO forgotten (persona, owner, at) VALUES (?, ?, ?) "
                "ON CONFLICT DO UPDATE SET at = max(at, excluded.at)",
                (persona or "", owner or "", at),
            )
            where = " AND ".join([*parts, "began <= ?"])
            return int(db.execute(f"DELETE FROM exchanges WHERE {where}", (*values, at)).rowcount)

        return await self._call(write, write=True)

    async def forget_turn(self, persona: str, trace_id: str, at: float) -> int:
        """Keep a tombstone of one turn and delete its row; return how many rows went."""

        def write(db: sqlite3.Connection) -> int:
            """Keep the tombstone (the newest ``MAX_FORGOTTEN_TURNS``) and delete, at once."""
            db.execute(
                "INSERT INTO forgotten_turns (persona, trace_id, at) VALUES (?, ?, ?) "
                "ON CONFLICT DO UPDATE SET at = max(at, excluded.at)",
                (persona, trace_id, at),
            )
            db.execute(
                "DELETE FROM forgotten_turns WHERE rowid NOT IN "
                "(SELECT rowid FROM forgotten_turns ORDER BY at DESC, rowid DESC LIMIT ?)",
                (MAX_FORGOTTEN_TURNS,),
            )
            return int(
                db.execute(
                    "DELETE FROM exchanges WHERE persona = ? AND trace_id = ?", (persona, trace_id)
                ).rowcount
            )

        return await self._call(write, write=True)

    async def prune(self, cutoff: float) -> int:
        """Delete the exchanges whose conversation and window nobody spoke in since ``cutoff``."""

        def delete(db: sqlite3.Connection) -> int:
            """Delete the rows of both views nobody spoke in since ``cutoff``."""
            return int(
                db.execute(
                    "DELETE FROM exchanges WHERE rowid IN (SELECT e.rowid FROM exchanges e WHERE"
                    " (e.conversation IS NULL OR (SELECT max(c.time) FROM exchanges c"
                    "  WHERE c.persona = e.persona AND c.conversation = e.conversation) < :cut)"
                    " AND (NOT e.windowed OR (SELECT max(w.time) FROM exchanges w"
                    "  WHERE w.persona = e.persona AND w.owner = e.owner AND w.windowed) < :cut))",
                    {"cut": cutoff},
                ).rowcount
            )

        def work(db: sqlite3.Connection) -> int:
            """Delete the rows (one transaction), then the old files left aside: one job."""
            gone = in_transaction(db, delete)
            return gone + (prune_legacy(self.legacy, cutoff) if self.legacy is not None else 0)

        return await self._call(work)

    async def counts(self) -> dict[str, int]:
        """Return how many conversations each persona holds."""

        def read(db: sqlite3.Connection) -> dict[str, int]:
            """Count each persona's conversations."""
            rows = db.execute(
                "SELECT persona, count(DISTINCT conversation) FROM exchanges GROUP BY persona"
            )
            return {str(persona): int(number) for persona, number in rows}

        return await self._call(read)

    async def close(self) -> None:
        """Close the file and end its thread."""
        await self._worker.close()

    async def _call[T](self, work: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        """Run ``work`` on the file's thread (a write in one transaction); report old files."""
        try:
            if write:
                return await self._worker.transaction(work)
            return await self._worker.run(work)
        finally:
            moved, self._legacy_moved = self._legacy_moved, []
            report = self._on_corrupt
            if report is not None:
                for bad, where in moved:
                    report(bad, where)

    async def _view(self, where: str, params: Sequence[object], limit: int) -> list[StoredTurn]:
        """Return the newest ``limit`` rows of a view as turns, oldest first."""

        def read(db: sqlite3.Connection) -> list[StoredTurn]:
            """Read and parse the rows; leave out one that cannot be read."""
            rows = db.execute(
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

        return await self._call(read)

    def _open(self, path: Path) -> tuple[sqlite3.Connection, Path | None]:
        """Open the file (file thread); the first time, read the old JSON histories in."""
        db, moved = open_checked(path, _prepare, synchronous="FULL")
        try:
            if self.legacy is not None:
                self._legacy_moved += read_legacy(db, self.legacy)
        except BaseException:
            db.close()
            raise
        return db, moved

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


def _refused(db: sqlite3.Connection, persona: str, owner: str | None, began: float) -> bool:
    """Say whether a tombstone of the persona and/or owner refuses a turn begun at ``began``."""
    row = db.execute(
        "SELECT 1 FROM forgotten WHERE persona IN ('', ?) AND owner IN ('', ?) AND at >= ? LIMIT 1",
        (persona, owner or "", began),
    ).fetchone()
    return row is not None


def _forgotten_turn(db: sqlite3.Connection, persona: str, trace_id: str) -> bool:
    """Say whether the turn ``trace_id`` was forgotten alone (a turn without one never was)."""
    if not trace_id:
        return False
    row = db.execute(
        "SELECT 1 FROM forgotten_turns WHERE persona = ? AND trace_id = ?", (persona, trace_id)
    ).fetchone()
    return row is not None
