"""``ConversationStores``: every persona's conversation store, one folder each, under one root.

``flush`` writes what is still in memory (bounded by a grace), ``prune`` deletes the
conversations of every persona on disk (running or not) that nobody spoke in for longer
than the retention.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ..errors import CorruptionReporter
from .history import ConversationStore

LOGGER = logging.getLogger(__name__)


class ConversationStores:
    """One ``ConversationStore`` per persona, in ``root/<persona id>/``."""

    def __init__(self, root: Path, on_corrupt: CorruptionReporter | None = None) -> None:
        """Keep conversations under ``root``; report files that are not what they should be."""
        self.root = root
        self._on_corrupt = on_corrupt
        self._stores: dict[str, ConversationStore] = {}

    def store(self, persona_id: str) -> ConversationStore:
        """Return the conversations of one persona."""
        if persona_id not in self._stores:
            self._stores[persona_id] = ConversationStore(
                self.root / persona_id, on_corrupt=self._on_corrupt
            )
        return self._stores[persona_id]

    def open_counts(self) -> dict[str, int]:
        """Return how many conversations each persona holds in memory."""
        return {persona_id: len(store) for persona_id, store in self._stores.items()}

    async def flush(self, grace: float) -> None:
        """Write every conversation still in memory, waiting ``grace`` seconds at most."""
        try:
            async with asyncio.timeout(grace):
                await asyncio.gather(*(store.flush() for store in self._stores.values()))
        except TimeoutError:
            LOGGER.warning("Conversations not written within %.0f s; going on", grace)

    async def prune(self, retention: float) -> int:
        """Delete every persona's conversations idle longer than ``retention`` seconds."""
        root = self.root
        personas = await asyncio.to_thread(
            lambda: [p.name for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
        )
        removed = 0
        for persona_id in personas:
            removed += await self.store(persona_id).prune(retention)
        return removed
