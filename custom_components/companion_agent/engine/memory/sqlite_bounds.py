"""The embedded store's bounds per scope, and the SQL that prunes down to them.

Every scope (persona, owner, environment) keeps at most ``details`` detail records and
``summaries`` summaries (oldest go first), ``retired_per_topic`` retired versions of each
state topic (the oldest retired go first), and ``relations`` graph relations (least recently
updated first) and as many entities (oldest first). Current state conclusions are never pruned. A
check runs every ``check_every`` adds (or merges) over the scopes written since, so a
scope may run over a bound by fewer than ``check_every`` records between two checks.
Blocking; run on the store's worker thread only, inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from . import sqlite_records

type ScopeKey = tuple[str, str, str]
_SCOPE = "agent_id = ? AND environment = ? AND owner = ?"


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBounds:
    """How much one scope keeps, and how often the store checks."""

    details: int = 20_000
    summaries: int = 2_000
    retired_per_topic: int = 20
    relations: int = 50_000
    check_every: int = 64


def prune_records(
    db: sqlite3.Connection, scope: ScopeKey, bounds: MemoryBounds
) -> list[tuple[str, ...]]:
    """Delete the scope's records beyond its bounds (terms too); return their scope keys."""
    agent, environment, owner = scope
    where = (
        f"rowid IN (SELECT rowid FROM memories WHERE {_SCOPE} AND kind = ? "
        "ORDER BY rowid DESC LIMIT -1 OFFSET ?)"
    )
    gone = sqlite_records.delete(db, where, [agent, environment, owner, "detail", bounds.details])
    gone += sqlite_records.delete(
        db, where, [agent, environment, owner, "summary", bounds.summaries]
    )
    retired = (
        "rowid IN (SELECT rowid FROM (SELECT rowid, row_number() OVER (PARTITION BY topic_key "
        "ORDER BY valid_until DESC, rowid DESC) AS place FROM memories "
        f"WHERE {_SCOPE} AND kind = 'state' AND valid_until IS NOT NULL) WHERE place > ?)"
    )
    gone += sqlite_records.delete(
        db, retired, [agent, environment, owner, bounds.retired_per_topic]
    )
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
        f"DELETE FROM entities WHERE rowid IN (SELECT rowid FROM entities WHERE {_SCOPE} "
        "ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)",
        (*scope, bounds.relations),
    )
    return int(gone)


class PruneSchedule:
    """Which scopes were written since the last check, and whether a check is due."""

    def __init__(self, every: int) -> None:
        """Check after every ``every`` writes."""
        self._every = max(1, every)
        self._writes = 0
        self._written: set[ScopeKey] = set()

    def due(self, scopes: list[ScopeKey]) -> list[ScopeKey]:
        """Note writes to ``scopes``; return the scopes to check now (none until due)."""
        self._writes += len(scopes)
        self._written.update(scopes)
        if self._writes < self._every:
            return []
        written = sorted(self._written)
        self._writes = 0
        self._written.clear()
        return written
