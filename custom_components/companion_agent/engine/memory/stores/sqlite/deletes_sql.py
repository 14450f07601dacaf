"""The embedded store's deletes: forgets of records and graph, with their tombstones, and pruning.

``forget`` writes its tombstone in the same transaction as its deletes; every add and graph
merge asks ``refused`` in its own transaction, so a write dated at or before a forget of
its scope (or of its content key, or of the statement it was derived from) never lands,
whatever order the two threads' calls took. The one-thing tombstones are bounded
(``MAX_TOMBSTONES``, the newest kept, as in the outbox); those of whole scopes are few and
all kept.

Forgetting a statement drops its links in ``graph_statements`` and then the facts left with
none (an entity only while no relation of its scope still names it), so what another
statement also said stays.

**Pruning** keeps one scope within its ``MemoryBounds``: details and summaries beyond their
bounds go oldest first (by insertion), retired versions of a topic oldest retired first,
relations least recently updated first; entities that no relation names go oldest first
beyond ``relations`` (so a scope holds at most twice ``relations`` entities), with the
statement links of what went. Current state conclusions are never pruned. The FTS terms go
with their records; the caller drops the scope's cached vectors.

Blocking: run on the store's worker thread only (pruning inside the caller's transaction).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from ....errors import MemoryInputError
from ...models import Forget, MemoryScope
from ...outbox.tombstones import MAX_TOMBSTONES, Tombstone, tombstone_of
from ..bounds import MemoryBounds, ScopeKey
from . import records_sql
from .records_sql import iso
from .vectors import VectorCache


def forget_where(what: Forget) -> tuple[str, list[str]]:
    """Return the WHERE fragment and params a ``Forget`` of a statement, person or persona names.

    Raise ``MemoryInputError`` unless it names one record alone, one statement with its
    person and persona, or a person, a persona or both (none of them empty). For a record
    it names nothing (the caller resolves it). A statement's fragment fits ``memories`` and
    ``graph_statements`` alike.
    """
    if what.record_id is not None:
        others = (what.owner, what.agent_id, what.statement)
        if not what.record_id or any(v is not None for v in others):
            raise MemoryInputError("forget names one record, or a person and/or a persona")
        return "0", []
    if what.statement is not None:
        if not (what.statement and what.owner and what.agent_id):
            raise MemoryInputError("forget of a statement names it, its person and its persona")
        return "environment = ? AND agent_id = ? AND owner = ? AND statement = ?", [
            what.environment, what.agent_id, what.owner, what.statement,
        ]  # fmt: skip
    whose = [v for v in (what.owner, what.agent_id) if v is not None]
    if not whose or not all(whose):
        raise MemoryInputError("forget names one record, or a person and/or a persona")
    parts, params = ["environment = ?"], [what.environment]
    if what.owner is not None:
        parts.append("owner = ?")
        params.append(what.owner)
    if what.agent_id is not None:
        parts.append("agent_id = ?")
        params.append(what.agent_id)
    return " AND ".join(parts), params


def record(db: sqlite3.Connection, tombstone: Tombstone) -> None:
    """Keep ``tombstone`` (a later one of the same scope and key replaces an earlier)."""
    db.execute(
        "INSERT INTO forgotten (environment, agent_id, owner, key, at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT DO UPDATE SET at = max(at, excluded.at)",
        (
            tombstone.environment,
            tombstone.agent_id or "",
            tombstone.owner or "",
            tombstone.key or "",
            iso(tombstone.at),
        ),
    )
    db.execute(
        "DELETE FROM forgotten WHERE key != '' AND rowid NOT IN "
        "(SELECT rowid FROM forgotten WHERE key != '' ORDER BY rowid DESC LIMIT ?)",
        (MAX_TOMBSTONES,),
    )


def refused(
    db: sqlite3.Connection, scope: MemoryScope, said: datetime, keys: Sequence[str] = ()
) -> set[str]:
    """Return which of ``keys`` a tombstone refuses for ``scope`` at ``said`` ("" : all of it)."""
    marks = ",".join("?" * (len(keys) + 1))
    rows = db.execute(
        "SELECT DISTINCT key FROM forgotten WHERE environment = ? "
        "AND agent_id IN ('', ?) AND owner IN ('', ?) AND at >= ? "
        f"AND key IN ({marks})",
        (scope.environment, scope.agent_id, scope.owner, iso(said), "", *keys),
    )
    return {str(row[0]) for row in rows}


def forget(db: sqlite3.Connection, what: Forget, vectors: VectorCache) -> int:
    """Keep ``what``'s tombstone, delete what it names (and its graph); return records gone.

    Runs inside the caller's transaction; the scopes whose records went lose their cached
    vectors.
    """
    where, params = forget_where(what)
    if what.record_id is not None:
        found = records_sql.by_id(db, what.record_id)
        if (tombstone := tombstone_of(what, None if found is None else found[0])) is not None:
            record(db, tombstone)
        gone = delete_history(db, what.record_id, what.environment)
    elif what.statement is not None:
        tombstone = tombstone_of(what)
        assert tombstone is not None
        record(db, tombstone)
        gone = delete_unlinked(db, where, params)
    else:
        whole = tombstone_of(what)
        assert whole is not None
        record(db, whole)
        forget_graph(db, where, params, what.moment)
        before = [*params, iso(what.moment)]
        gone = records_sql.delete(db, f"{where} AND valid_from <= ?", before)
    for agent, environment, owner in set(gone):
        vectors.invalidate((agent, environment, owner))
    return len(gone)


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
    return records_sql.delete(db, f"id IN ({marks}) AND environment = ?", [*ids, environment])


def delete_unlinked(
    db: sqlite3.Connection, where: str, params: Sequence[str]
) -> list[tuple[str, ...]]:
    """Delete the records ``where`` names, each alone, as if never said; return their scopes.

    A current conclusion among them gives its place back to the one it superseded (unless
    that goes too); a record that superseded one of them keeps its place but no longer
    points back.
    """
    rows = db.execute(
        f"SELECT id, supersedes, valid_until FROM memories WHERE {where}", params
    ).fetchall()
    if not rows:
        return []
    ids = [str(row[0]) for row in rows]
    marks = ",".join("?" * len(ids))
    restored = [(str(by), str(old)) for by, old, until in rows if until is None and old]
    db.executemany(
        "UPDATE memories SET valid_until = NULL, superseded_by = NULL "
        f"WHERE id = ? AND superseded_by = ? AND id NOT IN ({marks})",
        [(old, by, *ids) for by, old in restored],
    )
    db.execute(f"UPDATE memories SET supersedes = NULL WHERE supersedes IN ({marks})", ids)
    return records_sql.delete(db, f"id IN ({marks})", ids)


def forget_graph(
    db: sqlite3.Connection, where: str, params: Sequence[str], before: datetime
) -> int:
    """Delete the entities and relations matching ``where`` said at or before ``before``.

    Return how many relations went.
    """
    said = "AND (said_at IS NULL OR said_at <= ?)"
    gone = db.execute(f"DELETE FROM relations WHERE {where} {said}", [*params, iso(before)])
    db.execute(f"DELETE FROM entities WHERE {where} {said}", [*params, iso(before)])
    db.execute(f"DELETE FROM graph_statements WHERE {where} {said}", [*params, iso(before)])
    drop_orphan_links(db, where, params)
    return int(gone.rowcount)


def forget_graph_statement(db: sqlite3.Connection, where: str, params: Sequence[str]) -> int:
    """Unlink the statement ``where`` names; delete what no statement says any more.

    ``where`` names one statement of one scope (``forget_where``). An entity
    stays while a relation of its scope names it. Return how many relations went.
    """
    said = [str(row[0]) for row in db.execute(
        f"SELECT item_id FROM graph_statements WHERE {where}", params
    )]  # fmt: skip
    if not said:
        return 0
    db.execute(f"DELETE FROM graph_statements WHERE {where}", params)
    marks = ",".join("?" * len(said))
    unsaid = (
        f"id IN ({marks}) AND NOT EXISTS (SELECT 1 FROM graph_statements g WHERE g.item_id = id)"
    )
    gone = db.execute(f"DELETE FROM relations WHERE {unsaid}", said)
    db.execute(
        f"DELETE FROM entities WHERE {unsaid} AND NOT EXISTS (SELECT 1 FROM relations r "
        "WHERE r.agent_id = entities.agent_id AND r.environment = entities.environment "
        "AND r.owner = entities.owner AND entities.key IN (r.subject_key, r.object_key))",
        said,
    )
    return int(gone.rowcount)


def drop_orphan_links(db: sqlite3.Connection, where: str, params: Sequence[str]) -> None:
    """Delete the statement links, in the scopes ``where`` names, of facts that are gone."""
    db.execute(
        f"DELETE FROM graph_statements WHERE {where} "
        "AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.id = graph_statements.item_id) "
        "AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = graph_statements.item_id)",
        params,
    )


def forget_graph_item(db: sqlite3.Connection, item_id: str, environment: str) -> int:
    """Delete one relation, or one entity with every relation touching it; return relations."""
    if item_id.startswith("rel-"):
        gone = db.execute(
            "DELETE FROM relations WHERE id = ? AND environment = ?", (item_id, environment)
        )
        db.execute(
            "DELETE FROM graph_statements WHERE item_id = ? AND environment = ?",
            (item_id, environment),
        )
        return int(gone.rowcount)
    row = db.execute(
        "SELECT agent_id, owner, key FROM entities WHERE id = ? AND environment = ?",
        (item_id, environment),
    ).fetchone()
    if row is None:
        return 0
    agent, owner, key = row
    gone = db.execute(
        "DELETE FROM relations WHERE agent_id = ? AND environment = ? AND owner = ? "
        "AND (subject_key = ? OR object_key = ?)",
        (agent, environment, owner, key, key),
    )
    db.execute("DELETE FROM entities WHERE id = ? AND environment = ?", (item_id, environment))
    drop_orphan_links(
        db, "agent_id = ? AND environment = ? AND owner = ?", (agent, environment, owner)
    )
    return int(gone.rowcount)


# Pruning a scope down to its bounds.
_SCOPE = "agent_id = ? AND environment = ? AND owner = ?"


def prune_records(
    db: sqlite3.Connection, scope: ScopeKey, bounds: MemoryBounds
) -> list[tuple[str, ...]]:
    """Delete the scope's records beyond its bounds (terms too); return their scope keys."""
    agent, environment, owner = scope
    where = (
        f"rowid IN (SELECT rowid FROM memories WHERE {_SCOPE} AND kind = ? "
        "ORDER BY rowid DESC LIMIT -1 OFFSET ?)"
    )
    gone = records_sql.delete(db, where, [agent, environment, owner, "detail", bounds.details])
    gone += records_sql.delete(db, where, [agent, environment, owner, "summary", bounds.summaries])
    retired = (
        "rowid IN (SELECT rowid FROM (SELECT rowid, row_number() OVER (PARTITION BY topic_key "
        "ORDER BY valid_until DESC, rowid DESC) AS place FROM memories "
        f"WHERE {_SCOPE} AND kind = 'state' AND valid_until IS NOT NULL) WHERE place > ?)"
    )
    gone += records_sql.delete(db, retired, [agent, environment, owner, bounds.retired_per_topic])
    if gone:  # a newer version that superseded a pruned one no longer points back
        db.execute(
            "UPDATE memories SET supersedes = NULL WHERE supersedes IS NOT NULL "
            f"AND {_SCOPE} AND supersedes NOT IN (SELECT id FROM memories WHERE {_SCOPE})",
            (agent, environment, owner, agent, environment, owner),
        )
    return gone


def prune_graph(db: sqlite3.Connection, scope: ScopeKey, bounds: MemoryBounds) -> int:
    """Delete the scope's relations and entities beyond its bounds; return relations gone."""
    gone = db.execute(
        f"DELETE FROM relations WHERE rowid IN (SELECT rowid FROM relations WHERE {_SCOPE} "
        "ORDER BY updated_at DESC, rowid DESC LIMIT -1 OFFSET ?)",
        (*scope, bounds.relations),
    ).rowcount
    db.execute(
        "DELETE FROM entities WHERE rowid IN (SELECT e.rowid FROM entities e "
        "WHERE e.agent_id = ? AND e.environment = ? AND e.owner = ? AND NOT EXISTS ("
        " SELECT 1 FROM relations r WHERE r.agent_id = e.agent_id"
        " AND r.environment = e.environment AND r.owner = e.owner"
        " AND (r.subject_key = e.key OR r.object_key = e.key))"
        f" ORDER BY e.created_at, e.rowid LIMIT max(0, (SELECT count(*) FROM entities "
        f"WHERE {_SCOPE}) - ?))",
        (*scope, *scope, bounds.relations),
    )
    drop_orphan_links(db, _SCOPE, scope)
    return int(gone)
