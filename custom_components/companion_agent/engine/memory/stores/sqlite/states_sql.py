"""The state channel's SQL: current conclusions, and rolling one back (worker thread only).

A state record names the record it superseded (``supersedes``); rolling it back retires it
and makes that one current again, in the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

from ...models import MemoryRecord, MemoryScope
from . import records_sql
from .vectors import VectorCache

MAX_STATES = 50


def current_states(db: sqlite3.Connection, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
    """Return the current states of ``scopes``, newest first, at most ``MAX_STATES``."""
    where, params = records_sql.scope_clause(scopes)
    rows = db.execute(
        f"SELECT {records_sql.COLUMNS} FROM memories WHERE {where} AND kind = 'state' "
        "AND valid_until IS NULL ORDER BY valid_from DESC, rowid DESC LIMIT ?",
        (*params, MAX_STATES),
    )
    return [records_sql.record(row) for row in rows]


def rollback(
    db: sqlite3.Connection, record_id: str, environment: str, vectors: VectorCache
) -> MemoryRecord | None:
    """Retire a current state of ``environment``, restore its predecessor, return that one.

    None when there is no such current state, or it superseded nothing (it is then retired
    all the same). The scope's cached vectors are dropped.
    """
    found = records_sql.by_id(db, record_id)
    if found is None or found[0].kind != "state" or not found[0].current:
        return None
    if found[0].scope.environment != environment:  # never across environments
        return None
    record, previous = found
    now = records_sql.iso(datetime.now(UTC))
    db.execute("UPDATE memories SET valid_until = ? WHERE id = ?", (now, record.id))
    scope = record.scope
    vectors.invalidate((scope.agent_id, scope.environment, scope.owner))
    if previous is None:
        return None
    db.execute(
        "UPDATE memories SET valid_until = NULL, superseded_by = NULL WHERE id = ?", (previous,)
    )
    restored = records_sql.by_id(db, previous)
    return None if restored is None else restored[0]
