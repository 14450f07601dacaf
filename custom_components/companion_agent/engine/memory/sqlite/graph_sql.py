"""The knowledge graph's SQL (blocking; run on the store's worker thread only).

Entities and relations live per scope. Names are normalised into keys (``graph_names``),
so "Ann", "ann " and "ＡＮＮ" are one entity; the first spelling seen is kept for display.
A neighbourhood walks relations in both directions from the entities named, with a
recursive CTE, across the scopes given (the same name in the person's and the household's
graph is one node), at most ``MAX_HOPS`` hops and ``MAX_REACHED`` nodes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from ...chars import clean_text
from ..graph_names import MAX_NAME_CHARS, clean_name, name_key
from ..types import GraphFacts, MemoryScope, Relation
from .records_sql import iso, scope_clause

MAX_REACHED = 1000


def merge(db: sqlite3.Connection, scope: MemoryScope, facts: GraphFacts, now: datetime) -> None:
    """Upsert the entities and relations of ``facts`` into ``scope`` (caller's transaction)."""
    at = iso(facts.at or now)
    source = clean_text(facts.source, MAX_NAME_CHARS)
    names = [*facts.entities]
    for relation in facts.relations:
        names.extend((relation.subject, relation.object))
    seen: dict[str, str] = {}
    for raw in names:
        name = clean_name(raw)
        if name and name_key(name) not in seen:
            seen[name_key(name)] = name
    db.executemany(
        "INSERT INTO entities (agent_id, environment, owner, key, name, source, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [
            (scope.agent_id, scope.environment, scope.owner, key, name, source, at)
            for key, name in seen.items()
        ],
    )
    rows = []
    for relation in facts.relations:
        subject, predicate, obj = (
            clean_name(relation.subject),
            clean_name(relation.predicate),
            clean_name(relation.object),
        )
        if subject and predicate and obj:
            rows.append(
                (scope.agent_id, scope.environment, scope.owner, name_key(subject),
                 seen.get(name_key(subject), subject), name_key(predicate), predicate,
                 name_key(obj), seen.get(name_key(obj), obj), source, at, at)
            )  # fmt: skip
    db.executemany(
        "INSERT INTO relations (agent_id, environment, owner, subject_key, subject, "
        "predicate_key, predicate, object_key, object, source, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET updated_at = excluded.updated_at, source = excluded.source",
        rows,
    )


def neighbourhood(
    db: sqlite3.Connection,
    scopes: Sequence[MemoryScope],
    keys: Sequence[str],
    hops: int,
    limit: int,
) -> list[Relation]:
    """Return relations within ``hops`` of ``keys`` in ``scopes``, nearest and newest first."""
    where, params = scope_clause(scopes, "r")
    rows = db.execute(
        "WITH RECURSIVE reach(key, depth) AS ("
        " SELECT value, 0 FROM json_each(?)"
        " UNION"
        " SELECT CASE WHEN r.subject_key = reach.key THEN r.object_key ELSE r.subject_key END,"
        "  reach.depth + 1"
        f" FROM reach JOIN relations r ON {where}"
        "  AND (r.subject_key = reach.key OR r.object_key = reach.key)"
        " WHERE reach.depth + 1 < ? LIMIT ?),"
        " nearest(key, depth) AS (SELECT key, min(depth) FROM reach GROUP BY key)"
        " SELECT r.subject, r.predicate, r.object, min(n.depth) AS near, max(r.updated_at)"
        f" FROM relations r JOIN nearest n ON n.key IN (r.subject_key, r.object_key)"
        f" WHERE {where}"
        " GROUP BY r.subject_key, r.predicate_key, r.object_key"
        " ORDER BY near, max(r.updated_at) DESC LIMIT ?",
        (json.dumps(list(keys)), *params, hops, MAX_REACHED, *params, limit),
    )
    return [Relation(subject=str(s), predicate=str(p), object=str(o)) for s, p, o, _, _ in rows]


def forget(db: sqlite3.Connection, where: str, params: Sequence[str]) -> int:
    """Delete the entities and relations matching ``where``; return how many relations went."""
    gone = db.execute(f"DELETE FROM relations WHERE {where}", params).rowcount
    db.execute(f"DELETE FROM entities WHERE {where}", params)
    return int(gone)
