"""The embedded knowledge graph: ``EmbeddedGraph`` on the embedded store's file and thread, its SQL.

Entities and relations live per scope. Names are normalised into keys (``inputs.name_key``),
so "Ann", "ann " and "ＡＮＮ" are one entity; the first spelling seen is kept for display.
A neighbourhood walks relations in both directions from the entities named, with a
recursive CTE, across the scopes given (the same name in the person's and the household's
graph is one node), at most ``MAX_HOPS`` hops and ``MAX_REACHED`` nodes.

Each entity and relation has an id made from its scope and keys (``tombstones.graph_id``),
when it was last said (``said_at``) and its provenance. A merge leaves out what a
tombstone refuses (the scope's, an entity's — with the relations touching it —, a
relation's, or the statement's the facts were derived from), in its own transaction.

``graph_statements`` links each entity and relation to every statement that said it (a
fact with no statement is linked to ``""``, "said by what is not known"), at most
``MAX_STATEMENTS`` per fact: past that, ``""`` stands for the rest. The graph's deletes are
with every other forget, in ``deletes_sql``. The SQL functions block: they run on the
store's worker thread only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ....chars import clean_text
from ...models import Forget, GraphFacts, GraphItem, GraphPage, MemoryScope, Relation, page_bounds
from ...outbox.tombstones import graph_id, statement_keys, tombstone_of
from ...provenance import Provenance, as_via
from ..bounds import MemoryBounds, PruneSchedule
from ..inputs import (
    MAX_NAME_CHARS,
    MAX_STATEMENTS,
    UNKNOWN_STATEMENT,
    BoundedGraph,
    clean_name,
    clean_scope,
    name_key,
)
from . import deletes_sql
from .deletes_sql import forget_where, prune_graph
from .records_sql import iso, scope_clause

if TYPE_CHECKING:
    from ....sqlite import SQLiteWorker


class EmbeddedGraph(BoundedGraph):
    """Entities and relations per scope in the embedded store's SQLite file."""

    def __init__(self, worker: SQLiteWorker, bounds: MemoryBounds | None = None) -> None:
        """Share the store's worker thread and connection; keep each scope within ``bounds``."""
        self._worker = worker
        self._bounds = bounds or MemoryBounds()
        self._schedule = PruneSchedule(self._bounds.check_every)

    async def _merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge in one transaction; every ``bounds.check_every`` merges, prune the scopes due."""
        now = datetime.now(UTC)
        key = (scope.agent_id, scope.environment, scope.owner)

        def work(db: sqlite3.Connection) -> None:
            """Merge, then prune the scopes that are due."""
            merge_facts(db, scope, facts, now)
            for due in self._schedule.due([key]):
                prune_graph(db, due, self._bounds)

        await self._worker.transaction(work)

    async def _walk(
        self, scopes: list[MemoryScope], keys: list[str], hops: int, limit: int
    ) -> list[Relation]:
        """Walk the graph with one recursive query."""
        return await self._worker.run(lambda db: reachable_relations(db, scopes, keys, hops, limit))

    async def forget(self, what: Forget) -> int:
        """Delete a scope's graph (said at or before ``what.at``), one entity or relation, or
        what one statement said (what another statement also said stays).

        A tombstone is kept in the same transaction (see ``EmbeddedStore.forget``).
        """
        where, params = forget_where(what)
        record_id = what.record_id
        if record_id is not None and not record_id.startswith(("rel-", "ent-")):
            return 0
        tombstone = tombstone_of(what)

        def work(db: sqlite3.Connection) -> int:
            """Keep the tombstone, delete what it names."""
            if tombstone is not None:
                deletes_sql.record(db, tombstone)
            if record_id is not None:
                return deletes_sql.forget_graph_item(db, record_id, what.environment)
            if what.statement is not None:
                return deletes_sql.forget_graph_statement(db, where, params)
            return deletes_sql.forget_graph(db, where, params, what.moment)

        return await self._worker.transaction(work)

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = 100
    ) -> GraphPage:
        """Return a page of the entities and relations of ``scopes``, newest first."""
        cleaned = [clean_scope(scope) for scope in scopes]
        first, size = page_bounds(offset, limit)

        def work(db: sqlite3.Connection) -> GraphPage:
            """Read the page and the totals."""
            entities, relations, entity_total, relation_total = graph_page(db, cleaned, first, size)
            return GraphPage(
                entities=tuple(entities),
                relations=tuple(relations),
                total_entities=entity_total,
                total_relations=relation_total,
            )

        return await self._worker.run(work)

    async def close(self) -> None:
        """Close the shared file (the memory store's ``close`` does the same)."""
        await self._worker.close()


# The graph's SQL.
MAX_REACHED = 1000


def merge_facts(
    db: sqlite3.Connection, scope: MemoryScope, facts: GraphFacts, now: datetime
) -> None:
    """Upsert what ``facts`` holds into ``scope`` (caller's transaction), less what is refused."""
    said = facts.at or now
    at, source = iso(said), clean_text(facts.source, MAX_NAME_CHARS)
    origin = facts.provenance.cleaned().said_at(said)
    names = [*facts.entities]
    for relation in facts.relations:
        names.extend((relation.subject, relation.object))
    seen: dict[str, str] = {}
    for raw in names:
        name = clean_name(raw)
        if name and name_key(name) not in seen:
            seen[name_key(name)] = name
    rows = []
    for relation in facts.relations:
        subject, predicate, obj = (
            clean_name(relation.subject),
            clean_name(relation.predicate),
            clean_name(relation.object),
        )
        if subject and predicate and obj:
            keys = (name_key(subject), name_key(predicate), name_key(obj))
            rows.append((keys, seen.get(keys[0], subject), predicate, seen.get(keys[2], obj)))
    entity_ids = {key: graph_id("ent", scope, key) for key in seen}
    relation_ids = [graph_id("rel", scope, *keys) for keys, *_ in rows]
    statement = statement_keys(origin.statement)
    refused = deletes_sql.refused(db, scope, said, [*entity_ids.values(), *relation_ids,
                                                      *statement])  # fmt: skip
    if "" in refused or refused.intersection(statement):
        return
    fields = (source, at, origin.via, origin.person, origin.device, origin.conversation,
              origin.statement)  # fmt: skip
    db.executemany(
        "INSERT INTO entities (agent_id, environment, owner, key, name, created_at, id, "
        "source, said_at, via, person, device, conversation, statement) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
        "said_at = max(coalesce(said_at, ''), excluded.said_at)",
        [
            (
                scope.agent_id,
                scope.environment,
                scope.owner,
                key,
                name,
                at,
                entity_ids[key],
                *fields,
            )
            for key, name in seen.items()
            if entity_ids[key] not in refused
        ],
    )
    db.executemany(
        "INSERT INTO relations (agent_id, environment, owner, subject_key, subject, "
        "predicate_key, predicate, object_key, object, created_at, updated_at, id, "
        "source, said_at, via, person, device, conversation, statement) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET updated_at = excluded.updated_at, source = excluded.source, "
        "said_at = max(coalesce(said_at, ''), excluded.said_at), via = excluded.via, "
        "person = excluded.person, device = excluded.device, "
        "conversation = excluded.conversation, statement = excluded.statement",
        [
            (
                scope.agent_id,
                scope.environment,
                scope.owner,
                keys[0],
                subject,
                keys[1],
                predicate,
                keys[2],
                obj,
                iso(now),
                iso(now),
                relation_id,
                *fields,
            )
            for ((keys, subject, predicate, obj), relation_id) in zip(
                rows, relation_ids, strict=True
            )
            if not refused & {relation_id, entity_ids[keys[0]], entity_ids[keys[2]]}
        ],
    )
    linked = [i for i in entity_ids.values() if i not in refused]
    linked += [
        relation_id
        for (keys, *_), relation_id in zip(rows, relation_ids, strict=True)
        if not refused & {relation_id, entity_ids[keys[0]], entity_ids[keys[2]]}
    ]
    for item_id in dict.fromkeys(linked):
        _link(db, scope, item_id, origin.statement or UNKNOWN_STATEMENT, at)


def _link(
    db: sqlite3.Connection, scope: MemoryScope, item_id: str, statement: str, at: str
) -> None:
    """Note that ``statement`` said ``item_id`` (past ``MAX_STATEMENTS``: an unknown one)."""
    (count, listed) = db.execute(
        "SELECT count(*), coalesce(max(statement = ?), 0) FROM graph_statements WHERE item_id = ?",
        (statement, item_id),
    ).fetchone()
    if not listed and count >= MAX_STATEMENTS:
        statement = UNKNOWN_STATEMENT
    db.execute(
        "INSERT INTO graph_statements (agent_id, owner, environment, item_id, statement, "
        "said_at) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET said_at = max(said_at, excluded.said_at)",
        (scope.agent_id, scope.owner, scope.environment, item_id, statement, at),
    )


def reachable_relations(
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


def graph_page(
    db: sqlite3.Connection, scopes: Sequence[MemoryScope], offset: int, limit: int
) -> tuple[list[GraphItem], list[GraphItem], int, int]:
    """Return a page of the entities and of the relations of ``scopes``, newest first, and
    how many of each there are."""
    where, params = scope_clause(scopes)
    tail = "ORDER BY said_at DESC, rowid DESC LIMIT ? OFFSET ?"
    common = (
        "id, agent_id, environment, owner, source, said_at, via, person, device, conversation, "
        "statement"
    )
    entities = [
        _item(row[:11], name=str(row[11]))
        for row in db.execute(
            f"SELECT {common}, name FROM entities WHERE {where} {tail}", (*params, limit, offset)
        )
    ]
    relations = [
        _item(row[:11], relation=Relation(subject=row[11], predicate=row[12], object=row[13]))
        for row in db.execute(
            f"SELECT {common}, subject, predicate, object FROM relations WHERE {where} {tail}",
            (*params, limit, offset),
        )
    ]
    (entity_total,) = db.execute(f"SELECT count(*) FROM entities WHERE {where}", params).fetchone()
    (relation_total,) = db.execute(
        f"SELECT count(*) FROM relations WHERE {where}", params
    ).fetchone()
    return entities, relations, int(entity_total), int(relation_total)


def _item(row: Sequence[object], *, name: str = "", relation: Relation | None = None) -> GraphItem:
    """Return an exported graph item from its common columns."""
    item_id, agent, environment, owner, source, said, via, person, device, conversation = row[:10]
    statement = row[10]
    return GraphItem(
        id=str(item_id),
        scope=MemoryScope(agent_id=str(agent), environment=str(environment), owner=str(owner)),
        name=name,
        relation=relation,
        source=str(source),
        at=datetime.fromisoformat(str(said)) if said else None,
        provenance=Provenance(
            via=as_via(via),
            person=None if person is None else str(person),
            device=None if device is None else str(device),
            conversation=None if conversation is None else str(conversation),
            statement=None if statement is None else str(statement),
        ),
    )
