"""The SQL that prunes one scope of the embedded store down to its ``MemoryBounds``.

Details and summaries beyond their bounds go oldest first (by insertion), retired
versions of a topic oldest retired first, relations least recently updated first;
entities that no relation names go oldest first beyond ``relations`` (so a scope holds at
most twice ``relations`` entities), with the statement links of what went. Current state
conclusions are never pruned. The FTS terms go with their records; the caller drops the
scope's cached vectors. Blocking: run on the store's worker thread only, inside the
caller's transaction.
"""

from __future__ import annotations

import sqlite3

from ..bounds import MemoryBounds, ScopeKey
from . import forgotten_sql, records_sql

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
    forgotten_sql.drop_orphan_links(db, _SCOPE, scope)
    return int(gone)
