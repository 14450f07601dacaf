"""What the memory services read, and rolling a conclusion back: one store (and graph) call each.

``CompanionMemory`` is a ``MemoryReads``: each call is bounded by ``CALL_TIMEOUT``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from .models import MAX_PAGE, GraphStore, MemoryRecord, MemoryScope, MemoryStore
from .pages import ExportPage, GraphPage

CALL_TIMEOUT = 10.0


class MemoryReads:
    """Conclusions, one record, an export page; rollback (for the services and the list)."""

    store: MemoryStore
    graph: GraphStore | None
    environment: str

    async def rollback(self, record_id: str) -> MemoryRecord | None:
        """Retire a conclusion and bring back the one it superseded."""
        async with asyncio.timeout(CALL_TIMEOUT):
            return await self.store.rollback(record_id, self.environment)

    async def conclusions(self, scope: MemoryScope) -> list[MemoryRecord]:
        """Return the current conclusions of exactly ``scope``, newest first."""
        async with asyncio.timeout(CALL_TIMEOUT):
            states = await self.store.current_states([scope])
        return [record for record in states if record.scope == scope]

    async def get(self, record_id: str) -> MemoryRecord | None:
        """Return one record of this memory's environment, if it exists."""
        async with asyncio.timeout(CALL_TIMEOUT):
            return await self.store.get(record_id, self.environment)

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = MAX_PAGE
    ) -> tuple[ExportPage, GraphPage]:
        """Return a page of the records of ``scopes`` and of their graph, newest first."""
        async with asyncio.timeout(CALL_TIMEOUT):
            page = await self.store.export(scopes, offset=offset, limit=limit)
            graph = (
                await self.graph.export(scopes, offset=offset, limit=limit)
                if self.graph is not None
                else GraphPage()
            )
        return page, graph
