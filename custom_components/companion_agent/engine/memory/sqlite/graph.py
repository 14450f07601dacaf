"""The embedded knowledge graph: ``GraphStore`` on the embedded store's file and thread."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ...errors import MemoryInputError
from ..bounds import MemoryBounds, PruneSchedule
from ..graph_names import BoundedGraph
from ..types import Forget, GraphFacts, MemoryScope, Relation
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
            graph_sql.merge(db, scope, facts, now)
            for due in self._schedule.due([key]):
                prune_graph(db, due, self._bounds)

        await self._worker.transaction(work)

    async def _walk(
        self, scopes: list[MemoryScope], keys: list[str], hops: int, limit: int
    ) -> list[Relation]:
        """Walk the graph with one recursive query."""
        return await self._worker.run(
            lambda db: graph_sql.neighbourhood(db, scopes, keys, hops, limit)
        )

    async def forget(self, what: Forget) -> int:
        """Delete the graph of a person or persona; return how many relations went."""
        where, params = forget_where(what)
        if what.record_id is not None:
            return 0
        return await self._worker.transaction(lambda db: graph_sql.forget(db, where, params))

    async def close(self) -> None:
        """Close the shared file (the memory store's ``close`` does the same)."""
        await self._worker.close()
