"""The embedded knowledge graph: ``GraphStore`` on the embedded store's file and thread."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ...errors import MemoryInputError
from ..bounds import MemoryBounds, PruneSchedule
from ..inputs import clean_scope
from ..types import MAX_LIMIT, Forget, GraphFacts, MemoryScope, Relation, bounded
from . import graph_sql
from .pruning import prune_graph

if TYPE_CHECKING:
    from .worker import SQLiteWorker


def forget_where(what: Forget) -> tuple[str, list[str]]:
    """Return the WHERE fragment and params a ``Forget`` of a person or persona names.

    Raise ``MemoryInputError`` unless exactly one of record, person and persona is set.
    For a record it names nothing (the caller resolves the record's history).
    """
    named = [v for v in (what.record_id, what.owner, what.agent_id) if v is not None]
    if len(named) != 1 or not named[0]:
        raise MemoryInputError("forget names exactly one record, person or persona")
    if what.owner is not None:
        return "owner = ? AND environment = ?", [what.owner, what.environment]
    if what.agent_id is not None:
        return "agent_id = ? AND environment = ?", [what.agent_id, what.environment]
    return "0", []


class EmbeddedGraph:
    """Entities and relations per scope in the embedded store's SQLite file."""

    def __init__(self, worker: SQLiteWorker, bounds: MemoryBounds | None = None) -> None:
        """Share the store's worker thread and connection; keep each scope within ``bounds``."""
        self._worker = worker
        self._bounds = bounds or MemoryBounds()
        self._schedule = PruneSchedule(self._bounds.check_every)

    async def merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge ``facts`` into ``scope``'s graph in one transaction (idempotent).

        Every ``bounds.check_every`` merges, the scopes merged into since are pruned.
        """
        cleaned = clean_scope(scope)
        if len(facts.entities) + len(facts.relations) > graph_sql.MAX_FACTS:
            raise MemoryInputError(f"more than {graph_sql.MAX_FACTS} graph facts at once")
        now = datetime.now(UTC)
        key = (cleaned.agent_id, cleaned.environment, cleaned.owner)

        def work(db: sqlite3.Connection) -> None:
            """Merge, then prune the scopes that are due."""
            graph_sql.merge(db, cleaned, facts, now)
            for due in self._schedule.due([key]):
                prune_graph(db, due, self._bounds)

        await self._worker.transaction(work)

    async def neighbourhood(
        self,
        scopes: Sequence[MemoryScope],
        names: Sequence[str],
        *,
        hops: int = 2,
        limit: int = 20,
    ) -> list[Relation]:
        """Return relations within ``hops`` of the named entities, at most ``limit``."""
        cleaned = [clean_scope(scope) for scope in scopes]
        wanted = list(names)[:MAX_LIMIT]
        depth = max(1, min(hops, graph_sql.MAX_HOPS))

        def work(db: sqlite3.Connection) -> list[Relation]:
            """Walk the graph."""
            return graph_sql.neighbourhood(db, cleaned, wanted, depth, bounded(limit))

        return await self._worker.run(work)

    async def forget(self, what: Forget) -> int:
        """Delete the graph of a person or persona; return how many relations went."""
        where, params = forget_where(what)
        if what.record_id is not None:
            return 0
        return await self._worker.transaction(lambda db: graph_sql.forget(db, where, params))

    async def close(self) -> None:
        """Close the shared file (the memory store's ``close`` does the same)."""
        await self._worker.close()
