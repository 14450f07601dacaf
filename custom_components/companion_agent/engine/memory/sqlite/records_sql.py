"""The memory records' SQL (blocking; run on the store's worker thread only).

A record is one row of ``memories``; its segmented text is the ``memory_terms`` row with
the same rowid (``terms``), beside the terms of the detail said before it in the same
conversation (``context``: an answer is found by its question) and of the names it is
about (``names``). A state record names the record it superseded (``supersedes``), so a
rollback can bring that one back. Times are ISO 8601 in UTC.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from ..types import MemoryKind, MemoryRecord, MemoryScope
from .prepared import PreparedMemory

MAX_EXPORT = 100_000
MAX_STATES = 50
EPOCH_SECONDS = "(julianday(valid_from) - 2440587.5) * 86400.0"
REFUSED = "refused:"
"""Prefix of ``vector_model`` on a record whose text the embedding server refused."""
_COLUMNS = (
    "rowid, id, agent_id, owner, environment, kind, topic, text, source, created_at, "
    "valid_from, valid_until, superseded_by"
)


def iso(moment: datetime) -> str:
    """Return ``moment`` as ISO 8601 in UTC (a naive time is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def scope_clause(scopes: Sequence[MemoryScope], table: str = "") -> tuple[str, list[str]]:
    """Return a WHERE fragment matching any of ``scopes`` (nothing when empty), and params."""
    prefix = f"{table}." if table else ""
    if not scopes:
        return "0", []
    parts: list[str] = []
    params: list[str] = []
    for scope in dict.fromkeys(scopes):
        parts.append(f"({prefix}agent_id = ? AND {prefix}environment = ? AND {prefix}owner = ?)")
        params.extend((scope.agent_id, scope.environment, scope.owner))
    return "(" + " OR ".join(parts) + ")", params


def _record(row: sqlite3.Row | tuple[object, ...]) -> MemoryRecord:
    """Return the record of one ``_COLUMNS`` row."""
    (_, rid, agent, owner, env, kind, topic, text, source, created, since, until, by) = row
    return MemoryRecord(
        id=str(rid),
        scope=MemoryScope(agent_id=str(agent), owner=str(owner), environment=str(env)),
        text=str(text),
        kind=_kind(kind),
        topic=None if topic is None else str(topic),
        source=str(source),
        created_at=datetime.fromisoformat(str(created)),
        valid_from=datetime.fromisoformat(str(since)),
        valid_until=None if until is None else datetime.fromisoformat(str(until)),
        superseded_by=None if by is None else str(by),
    )


def _kind(value: object) -> MemoryKind:
    """Return a stored kind as a ``MemoryKind`` (an unknown one reads as detail)."""
    match value:
        case "state":
            return "state"
        case "summary":
            return "summary"
        case _:
            return "detail"


def insert(db: sqlite3.Connection, memory: PreparedMemory, now: datetime) -> int:
    """Insert one record and its terms; a state on a topic retires the current one first.

    Returns the new rowid. Runs inside the caller's transaction.
    """
    supersedes: str | None = None
    if memory.kind == "state" and memory.topic_key is not None:
        supersedes = _retire_topic(db, memory, now)
    cursor = db.execute(
        "INSERT INTO memories (id, agent_id, owner, environment, kind, topic, topic_key, "
        "text, source, created_at, valid_from, supersedes, vector, vector_model) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            memory.id,
            memory.scope.agent_id,
            memory.scope.owner,
            memory.scope.environment,
            memory.kind,
            memory.topic,
            memory.topic_key,
            memory.text,
            memory.source,
            iso(now),
            iso(memory.at),
            supersedes,
            memory.vector,
            memory.vector_model,
        ),
    )
    rowid = cursor.lastrowid
    assert rowid is not None
    db.execute(
        "INSERT INTO memory_terms (rowid, terms, context, names) VALUES (?, ?, ?, ?)",
        (rowid, memory.terms, _context(db, memory, rowid), memory.name_terms),
    )
    return rowid


def _context(db: sqlite3.Connection, memory: PreparedMemory, rowid: int) -> str:
    """Return the terms of the detail said just before ``memory`` in its conversation."""
    if memory.kind != "detail" or not memory.source:
        return ""
    scope = memory.scope
    row = db.execute(
        "SELECT t.terms FROM memories m JOIN memory_terms t ON t.rowid = m.rowid "
        "WHERE m.agent_id = ? AND m.environment = ? AND m.owner = ? AND m.source = ? "
        "AND m.kind = 'detail' AND m.rowid < ? ORDER BY m.rowid DESC LIMIT 1",
        (scope.agent_id, scope.environment, scope.owner, memory.source, rowid),
    ).fetchone()
    return "" if row is None else str(row[0])


def _retire_topic(db: sqlite3.Connection, memory: PreparedMemory, now: datetime) -> str | None:
    """Retire the current states on the memory's topic and scope; return the newest one's id."""
    scope = memory.scope
    rows = db.execute(
        "SELECT id FROM memories WHERE agent_id = ? AND environment = ? AND owner = ? "
        "AND topic_key = ? AND kind = 'state' AND valid_until IS NULL "
        "ORDER BY valid_from DESC, rowid DESC",
        (scope.agent_id, scope.environment, scope.owner, memory.topic_key),
    ).fetchall()
    db.executemany(
        "UPDATE memories SET valid_until = ?, superseded_by = ? WHERE id = ?",
        [(iso(now), memory.id, row[0]) for row in rows],
    )
    return str(rows[0][0]) if rows else None


def records(db: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, MemoryRecord]:
    """Return the records of ``rowids`` by rowid (missing ones are left out)."""
    if not rowids:
        return {}
    marks = ",".join("?" * len(rowids))
    rows = db.execute(f"SELECT {_COLUMNS} FROM memories WHERE rowid IN ({marks})", rowids)
    return {int(row[0]): _record(row) for row in rows}


def by_id(db: sqlite3.Connection, record_id: str) -> tuple[MemoryRecord, str | None] | None:
    """Return the record ``record_id`` and the id it superseded, or None."""
    row = db.execute(
        f"SELECT {_COLUMNS}, supersedes FROM memories WHERE id = ?", (record_id,)
    ).fetchone()
    if row is None:
        return None
    return _record(row[:-1]), None if row[-1] is None else str(row[-1])


def keyword_ranking(
    db: sqlite3.Connection,
    expression: str,
    *,
    scopes: Sequence[MemoryScope],
    kinds: Iterable[MemoryKind],
    include_history: bool,
    limit: int,
    weights: tuple[float, float, float] = (1.0, 0.0, 0.0),
    span: tuple[str, str] | None = None,
) -> list[int]:
    """Return the rowids matching an FTS5 ``expression`` in ``scopes``, best BM25 first.

    ``weights`` weigh the ``terms``, ``context`` and ``names`` columns (a column of weight
    0 is not searched); ``span`` keeps the records said within it (ISO times, end excluded).
    """
    where, params = scope_clause(scopes, "m")
    kind_list = sorted(set(kinds))
    current = "" if include_history else "AND m.valid_until IS NULL"
    columns = [c for c, w in zip(("terms", "context", "names"), weights, strict=True) if w > 0]
    when, moments = ("AND m.valid_from >= ? AND m.valid_from < ?", span) if span else ("", ())
    rows = db.execute(
        "SELECT m.rowid FROM memory_terms JOIN memories m ON m.rowid = memory_terms.rowid "
        f"WHERE memory_terms MATCH ? AND {where} "
        f"AND m.kind IN ({','.join('?' * len(kind_list))}) {current} {when} "
        "ORDER BY bm25(memory_terms, ?, ?, ?), m.valid_from DESC LIMIT ?",
        (
            f"{{{' '.join(columns)}}} : ({expression})",
            *params,
            *kind_list,
            *moments,
            *weights,
            limit,
        ),
    )
    return [int(row[0]) for row in rows]


def neighbours(db: sqlite3.Connection, rowids: Sequence[int]) -> list[int]:
    """Return the details said just after and just before each of ``rowids``, in order.

    Neighbours are of the same scope and conversation (``source``), current, each once.
    """
    found: dict[int, None] = {}
    for rowid in rowids:
        row = db.execute(
            "SELECT agent_id, environment, owner, source FROM memories WHERE rowid = ?",
            (rowid,),
        ).fetchone()
        if row is None or not row[3]:
            continue
        for compare, order in ((">", "ASC"), ("<", "DESC")):
            near = db.execute(
                "SELECT rowid FROM memories WHERE agent_id = ? AND environment = ? "
                "AND owner = ? AND source = ? AND kind = 'detail' AND valid_until IS NULL "
                f"AND rowid {compare} ? ORDER BY rowid {order} LIMIT 1",
                (*row, rowid),
            ).fetchone()
            if near is not None and near[0] not in rowids:
                found[int(near[0])] = None
    return list(found)


def vector_rows(
    db: sqlite3.Connection, scope: tuple[str, str, str], model: str, *, history: bool = False
) -> Iterable[tuple[int, str, bytes, float]]:
    """Yield ``(rowid, kind, vector, said at)`` of a scope's current records of ``model``.

    ``said at`` is seconds since the epoch. ``history`` yields the retired records too.
    """
    agent, environment, owner = scope
    current = "" if history else "AND valid_until IS NULL"
    yield from db.execute(
        f"SELECT rowid, kind, vector, {EPOCH_SECONDS} FROM memories WHERE agent_id = ? "
        "AND environment = ? AND owner = ? AND vector_model = ? AND vector IS NOT NULL "
        f"{current}",
        (agent, environment, owner, model),
    )


def current_states(db: sqlite3.Connection, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
    """Return the current states of ``scopes``, newest first, at most ``MAX_STATES``."""
    where, params = scope_clause(scopes)
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE {where} AND kind = 'state' "
        "AND valid_until IS NULL ORDER BY valid_from DESC, rowid DESC LIMIT ?",
        (*params, MAX_STATES),
    )
    return [_record(row) for row in rows]


def export(db: sqlite3.Connection, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
    """Return every record of ``scopes``, oldest first, at most ``MAX_EXPORT``."""
    where, params = scope_clause(scopes)
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE {where} ORDER BY created_at, rowid LIMIT ?",
        (*params, MAX_EXPORT),
    )
    return [_record(row) for row in rows]


def delete(
    db: sqlite3.Connection, where: str, params: Sequence[str | int]
) -> list[tuple[str, ...]]:
    """Delete the records matching ``where`` and their terms; return their scope keys."""
    rows = db.execute(
        f"SELECT rowid, agent_id, environment, owner FROM memories WHERE {where}", params
    ).fetchall()
    db.executemany("DELETE FROM memory_terms WHERE rowid = ?", [(row[0],) for row in rows])
    db.executemany("DELETE FROM memories WHERE rowid = ?", [(row[0],) for row in rows])
    return [tuple(str(v) for v in row[1:]) for row in rows]


def delete_history(
    db: sqlite3.Connection, record_id: str, environment: str
) -> list[tuple[str, ...]]:
    """Delete a record and every record it superseded, in ``environment``; return scopes.

    A newer record that superseded one of them keeps its place but no longer points back.
    """
    rows = db.execute(
        "WITH RECURSIVE chain(id, depth) AS ("
        " SELECT id, 0 FROM memories WHERE id = ? AND environment = ? UNION"
        " SELECT m.supersedes, chain.depth + 1 FROM memories m JOIN chain ON m.id = chain.id"
        " WHERE m.supersedes IS NOT NULL AND chain.depth < 1000) SELECT id FROM chain",
        (record_id, environment),
    )
    ids = [str(row[0]) for row in rows]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    db.execute(f"UPDATE memories SET supersedes = NULL WHERE supersedes IN ({marks})", ids)
    return delete(db, f"id IN ({marks}) AND environment = ?", [*ids, environment])


def unembedded(
    db: sqlite3.Connection, model: str, limit: int
) -> list[tuple[int, str, tuple[str, str, str]]]:
    """Return ``(rowid, text, scope key)`` of current records without a ``model`` vector.

    Newest first; records whose text the server refused for ``model`` are left out.
    """
    rows = db.execute(
        "SELECT rowid, text, agent_id, environment, owner FROM memories "
        "WHERE valid_until IS NULL AND (vector_model IS NULL OR "
        "(vector_model != ? AND vector_model != ?)) ORDER BY rowid DESC LIMIT ?",
        (model, REFUSED + model, limit),
    )
    return [(int(r[0]), str(r[1]), (str(r[2]), str(r[3]), str(r[4]))) for r in rows]


def mark_refused(db: sqlite3.Connection, rowid: int, model: str) -> None:
    """Mark a record whose text the embedding server refused, so it is not asked again."""
    db.execute(
        "UPDATE memories SET vector = NULL, vector_model = ? WHERE rowid = ?",
        (REFUSED + model, rowid),
    )


def counts(db: sqlite3.Connection) -> dict[str, int]:
    """Return record counts by kind and by current/retired, and the graph's sizes."""
    figures = {"detail": 0, "state": 0, "summary": 0, "current": 0, "retired": 0}
    for kind, retired, number in db.execute(
        "SELECT kind, valid_until IS NOT NULL, count(*) FROM memories GROUP BY 1, 2"
    ):
        figures[_kind(kind)] += int(number)
        figures["retired" if retired else "current"] += int(number)
    figures["entities"] = int(db.execute("SELECT count(*) FROM entities").fetchone()[0])
    figures["relations"] = int(db.execute("SELECT count(*) FROM relations").fetchone()[0])
    return figures
