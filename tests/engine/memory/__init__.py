"""Tests of the memory stores: the scopes they share, and what a search finds."""

from collections.abc import Sequence

from custom_components.companion_agent.engine.memory.models import (
    MAX_PAGE,
    MemoryQuery,
    MemoryRecord,
    MemoryScope,
    MemoryStore,
    NewMemory,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore

HOME = MemoryScope(agent_id="nova")
ANNA = MemoryScope.for_turn("nova", "anna")
BEN = MemoryScope.for_turn("nova", "ben")


async def found(store: EmbeddedStore, text: str, scope: MemoryScope = HOME) -> list[str]:
    """Return the texts a search in ``scope`` finds for ``text``, best first."""
    return [h.record.text for h in await store.search(MemoryQuery(text=text, scopes=(scope,)))]


async def every_record(store: MemoryStore, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
    """Return every record of ``scopes``, replaced ones included, oldest first (every page)."""
    records: list[MemoryRecord] = []
    while True:
        page = await store.export(scopes, offset=len(records), limit=MAX_PAGE)
        records.extend(page.records)
        if not page.records or len(records) >= page.total:
            return list(reversed(records))


async def superseded(store: MemoryStore, memory: NewMemory) -> MemoryRecord:
    """Store a conclusion through ``store.supersede`` and return it (no tombstone refuses it)."""
    record = await store.supersede(memory)
    assert record is not None, "the store refused a conclusion no forget covers"
    return record
