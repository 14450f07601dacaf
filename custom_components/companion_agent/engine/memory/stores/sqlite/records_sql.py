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

from ...models import ExportPage, MemoryKind, MemoryRecord, MemoryScope
from ...provenance import Provenance, as_via
from .dialog_sql import conversation_of, renew_contexts, said_after, said_before
from .prepared import PreparedMemory

COLUMNS = (
    "rowid, id, agent_id, owner, environment, kind, topic, text, source, created_at, "
    "valid_from, valid_until, superseded_by, via, person, device, conversation, statement"
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


def record(row: sqlite3.Row | tuple[object, ...]) -> MemoryRecord:
    """Return the record of one ``COLUMNS`` row."""
    (_, rid, agent, owner, env, kind, topic, text, source, created, since, until, by) = row[:13]
    via, person, device, conversation, statement = row[13:18]
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
        provenance=Provenance(
            via=as_via(via),
            person=_text(person),
            device=_text(device),
            conversation=_text(conversation),
            statement=_text(statement),
        ),
    )


def _text(value: object) -> str | None:
    """Return a stored optional text."""
    return None if value is None else str(value)


def _kind(value: object) -> MemoryKind:
    """Return a stored kind as a ``MemoryKind`` (an unknown one reads as detail)."""
    match value:
        case "state":
            return "state"
        case "summary":
            return "summary"
        case _:
            return "detail"


def insert(db: sqlite3.Connection, memory: PreparedMemory, now: datetime) -> tuple[int, int | None]:
    """Insert one record and its terms; a state on a topic retires the current one first.

    Returns the new rowid, and the rowid of the question said just before it in its
    conversation (None: none; see ``dialog_sql``). Runs inside the caller's transaction.
    """
    supersedes: str | None = None
    if memory.kind == "state" and memory.topic_key is not None:
        supersedes = _retire_topic(db, memory, now)
    origin = memory.provenance
    cursor = db.execute(
        "INSERT INTO memories (id, agent_id, owner, environment, kind, topic, topic_key, "
        "text, source, created_at, valid_from, supersedes, vector, vector_model, "
        "via, person, device, conversation, statement) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            origin.via,
            origin.person,
            origin.device,
            origin.conversation,
            origin.statement,
        ),
    )
    rowid = cursor.lastrowid
    assert rowid is not None
    context, question = said_before(db, conversation_of(memory), rowid)
    db.execute(
        "INSERT INTO memory_terms (rowid, terms, context, names) VALUES (?, ?, ?, ?)",
        (rowid, memory.terms, context, memory.name_terms),
    )
    return rowid, question


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
    rows = db.execute(f"SELECT {COLUMNS} FROM memories WHERE rowid IN ({marks})", rowids)
    return {int(row[0]): record(row) for row in rows}


def by_id(db: sqlite3.Connection, record_id: str) -> tuple[MemoryRecord, str | None] | None:
    """Return the record ``record_id`` and the id it superseded, or None."""
    row = db.execute(
        f"SELECT {COLUMNS}, supersedes FROM memories WHERE id = ?", (record_id,)
    ).fetchone()
    if row is None:
        return None
    return record(row[:-1]), None if row[-1] is None else str(row[-1])


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
    about: str | None = None,
) -> list[int]:
    """Return the rowids matching an FTS5 ``expression`` in ``scopes``, best BM25 first.

    ``weights`` weigh the ``terms``, ``context`` and ``names`` columns (a column of weight
    0 is not searched); ``span`` keeps the records said within it (ISO times, end excluded);
    ``about`` (an FTS5 expression of its own columns) keeps the records it matches too.
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
            f"{{{' '.join(columns)}}} : ({expression})" + (f" AND {about}" if about else ""),
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


def get(db: sqlite3.Connection, record_id: str, environment: str) -> MemoryRecord | None:
    """Return the record ``record_id`` of ``environment``, current or not, or None."""
    found = by_id(db, record_id)
    return found[0] if found is not None and found[0].scope.environment == environment else None


def export(
    db: sqlite3.Connection, scopes: Sequence[MemoryScope], offset: int, limit: int
) -> ExportPage:
    """Return one page of the records of ``scopes``, newest first, and how many there are."""
    where, params = scope_clause(scopes)
    (total,) = db.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchone()
    rows = db.execute(
        f"SELECT {COLUMNS} FROM memories WHERE {where} "
        "ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
        (*params, limit, offset),
    )
    return ExportPage(records=tuple(record(row) for row in rows), total=int(total))


def delete(
    db: sqlite3.Connection, where: str, params: Sequence[str | int]
) -> list[tuple[str, ...]]:
    """Delete the records matching ``where`` and their terms; return their scope keys.

    The details said just after them lose the words of the ones gone from their context.
    """
    rows = db.execute(
        f"SELECT rowid, agent_id, environment, owner, kind, source FROM memories WHERE {where}",
        params,
    ).fetchall()
    after = said_after(db, rows)
    db.executemany("DELETE FROM memory_terms WHERE rowid = ?", [(row[0],) for row in rows])
    db.executemany("DELETE FROM memories WHERE rowid = ?", [(row[0],) for row in rows])
    renew_contexts(db, after)
    return [tuple(str(v) for v in row[1:4]) for row in rows]


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
