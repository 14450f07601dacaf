"""The memory records' SQL: insert, read, rank by keywords, delete; states; what was said before.

A record is one row of ``memories``; its segmented text is the ``memory_terms`` row with
the same rowid (``terms``), beside the terms of the detail said before it in the same
conversation (``context``: an answer is found by its question) and of the names it is
about (``names``). Times are ISO 8601 in UTC. Blocking: run on the store's worker thread
only.

**The state channel.** A state record names the record it superseded (``supersedes``);
``rollback`` retires it and makes that one current again, in the caller's transaction.

**What was said before.** A detail of a conversation (a ``source``) is searched with the
detail said just before it: by its words always (``memory_terms.context``: an answer is
found by its question, a remark by what it remarks on), by its meaning when that one asks
something (the vector ranking ``SearchSettings.context_vectors``; a fact said after an
unrelated fact is not found by it). A detail that goes (forgotten, pruned) takes its words
out of the context of the detail said after it, which gets the words of the one said
before instead (``renew_contexts``): what was forgotten is found by nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from ...models import ExportPage, MemoryKind, MemoryRecord, MemoryScope
from ...provenance import Provenance, as_via
from ...retrieval.keywords import asks
from .prepared import PreparedMemory
from .vectors import VectorCache

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
    conversation (None: none; see ``said_before``). Runs inside the caller's transaction.
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


# The state channel: current conclusions, and rolling one back.
MAX_STATES = 50


def current_states(db: sqlite3.Connection, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
    """Return the current states of ``scopes``, newest first, at most ``MAX_STATES``."""
    where, params = scope_clause(scopes)
    rows = db.execute(
        f"SELECT {COLUMNS} FROM memories WHERE {where} AND kind = 'state' "
        "AND valid_until IS NULL ORDER BY valid_from DESC, rowid DESC LIMIT ?",
        (*params, MAX_STATES),
    )
    return [record(row) for row in rows]


def rollback(
    db: sqlite3.Connection, record_id: str, environment: str, vectors: VectorCache
) -> MemoryRecord | None:
    """Retire a current state of ``environment``, restore its predecessor, return that one.

    None when there is no such current state, or it superseded nothing (it is then retired
    all the same). The scope's cached vectors are dropped.
    """
    found = by_id(db, record_id)
    if found is None or found[0].kind != "state" or not found[0].current:
        return None
    if found[0].scope.environment != environment:  # never across environments
        return None
    record, previous = found
    now = iso(datetime.now(UTC))
    db.execute("UPDATE memories SET valid_until = ? WHERE id = ?", (now, record.id))
    scope = record.scope
    vectors.invalidate((scope.agent_id, scope.environment, scope.owner))
    if previous is None:
        return None
    db.execute(
        "UPDATE memories SET valid_until = NULL, superseded_by = NULL WHERE id = ?", (previous,)
    )
    restored = by_id(db, previous)
    return None if restored is None else restored[0]


# What was said just before a detail in its conversation.
_BEFORE = (
    "SELECT m.rowid, m.text, t.terms FROM memories m JOIN memory_terms t ON t.rowid = m.rowid "
    "WHERE m.agent_id = ? AND m.environment = ? AND m.owner = ? AND m.source = ? "
    "AND m.kind = 'detail' AND m.rowid < ? ORDER BY m.rowid DESC LIMIT 1"
)
_AFTER = (
    "SELECT rowid FROM memories WHERE agent_id = ? AND environment = ? AND owner = ? "
    "AND source = ? AND kind = 'detail' AND rowid > ? ORDER BY rowid LIMIT 1"
)

type Conversation = tuple[str, str, str, str]
"""A conversation of one scope: persona, environment, owner and ``source``."""
type DetailRow = tuple[int, str, str, str, str, str]
"""A record's rowid, persona, environment, owner, kind and conversation (``source``)."""


def conversation_of(memory: PreparedMemory) -> Conversation | None:
    """Return the conversation a memory is a detail of (None: not a detail, or of none)."""
    if memory.kind != "detail" or not memory.source:
        return None
    scope = memory.scope
    return scope.agent_id, scope.environment, scope.owner, memory.source


def said_before(
    db: sqlite3.Connection, conversation: Conversation | None, rowid: int
) -> tuple[str, int | None]:
    """Return what was said just before row ``rowid`` in ``conversation``.

    That is the words (terms) of the newest earlier detail of the conversation ("" when
    there is none), and its rowid when it asks something (``keywords.asks``; else None).
    """
    if conversation is None:
        return "", None
    row = db.execute(_BEFORE, (*conversation, rowid)).fetchone()
    if row is None:
        return "", None
    return str(row[2]), int(row[0]) if asks(str(row[1])) else None


def said_after(db: sqlite3.Connection, going: Sequence[DetailRow]) -> list[int]:
    """Return the details said just after the ``going`` ones that are not going themselves.

    Their context holds the words of one that goes: ``renew_contexts`` once it has gone.
    """
    gone = {row[0] for row in going}
    after: dict[int, None] = {}
    for rowid, agent, environment, owner, kind, source in going:
        if kind != "detail" or not source:
            continue
        row = db.execute(_AFTER, (agent, environment, owner, source, rowid)).fetchone()
        if row is not None and int(row[0]) not in gone:
            after[int(row[0])] = None
    return list(after)


def renew_contexts(db: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """Give each detail the words of the detail now said just before it (none: empty)."""
    for rowid in rowids:
        row = db.execute(
            "SELECT agent_id, environment, owner, source FROM memories WHERE rowid = ?",
            (rowid,),
        ).fetchone()
        if row is not None:
            terms, _ = said_before(db, tuple(row), rowid)
            db.execute("UPDATE memory_terms SET context = ? WHERE rowid = ?", (terms, rowid))
