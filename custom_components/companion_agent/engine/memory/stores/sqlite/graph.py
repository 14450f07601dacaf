"""The embedded knowledge graph: ``GraphStore`` on the embedded store's file and thread."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ...models import Forget, GraphFacts, GraphPage, MemoryScope, Relation, page_bounds
from ...outbox.tombstones import tombstone_of
from ..bounds import MemoryBounds, PruneSchedule
from ..graph_names import BoundedGraph
from ..inputs import clean_scope
from . import forgotten_sql, graph_sql
from .forgotten_sql import forget_where
from .pruning import prune_graph

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
                forgotten_sql.record(db, tombstone)
            if record_id is not None:
                return forgotten_sql.forget_graph_item(db, record_id, what.environment)
            if what.statement is not None:
                return forgotten_sql.forget_graph_statement(db, where, params)
            return forgotten_sql.forget_graph(db, where, params, what.moment)

        return await self._worker.transaction(work)

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = 100
    ) -> GraphPage:
        """Return a page of the entities and relations of ``scopes``, newest first."""
        cleaned = [clean_scope(scope) for scope in scopes]
        first, size = page_bounds(offset, limit)

        def work(db: sqlite3.Connection) -> GraphPage:
            """Read the page and the totals."""
            entities, relations, entity_total, relation_total = graph_sql.export(
                db, cleaned, first, size
            )
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
