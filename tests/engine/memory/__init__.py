"""Tests of the memory stores: the scopes they share, and what a search finds."""

from custom_components.companion_agent.engine.memory.sqlite.store import EmbeddedStore
from custom_components.companion_agent.engine.memory.types import MemoryQuery, MemoryScope

HOME = MemoryScope(agent_id="nova")
ANNA = MemoryScope.for_turn("nova", "anna")
BEN = MemoryScope.for_turn("nova", "ben")


async def found(store: EmbeddedStore, text: str, scope: MemoryScope = HOME) -> list[str]:
    """Return the texts a search in ``scope`` finds for ``text``, best first."""
    return [h.record.text for h in await store.search(MemoryQuery(text=text, scopes=(scope,)))]
