"""A ``MemoryStore`` over mem0 (``mem0ai``) with Qdrant: files in a folder, or a server.

Everything mem0 does is blocking, so it runs on the store's own thread (``Mem0Worker``):
one ``Memory`` (and one Qdrant client) per store, every call in turn, each within the
timeout. mem0 is imported on that thread on ``open``; a host installs it on demand
(``MEM0_REQUIREMENTS``). See ``setup`` for telemetry, files and Qdrant, and
``records`` for how scopes and the state channel map onto mem0.

What differs from the embedded store: search is by vector only (mem0's BM25 needs
fastembed, which downloads its model at run time, and its entity boost spaCy; neither is
installed), so a query always finds the nearest records of its scopes that clear mem0's
threshold, and one whose embedding is late or fails finds nothing (the searches of one
turn share one embedding request); an add embeds ``EMBED_CHUNK`` texts a request; mem0
has no transactions, so an ``add`` that fails part way deletes what it added,
supersede/rollback are metadata updates in sequence on the one worker thread, and
tombstones are checked around each write by the caller (``writes``);
``count`` has no graph figures (the graph is a separate ``GraphStore``). A store made while
its backend was away opens at its first call after (``worker.REOPEN_RETRY``).

Bounds (``MemoryBounds``): every ``check_every`` adds, the scopes written since lose their
oldest details and summaries beyond the caps. Retired states are not pruned (finding a
topic's oldest would list the topic on every check), nor mem0's own ``history.db``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from ....errors import MemoryBackendError, MemoryStoreError
from ... import models as memory_models
from ...embeddings import Embedder
from ...models import (
    MAX_PAGE,
    BackendCheck,
    ExportPage,
    Forget,
    MemoryHit,
    MemoryQuery,
    MemoryRecord,
    MemoryScope,
    NewMemory,
    bounded,
    page_bounds,
)
from ...retrieval.keywords import query_terms
from ...retrieval.query_vectors import QueryVectors
from ..bounds import MemoryBounds, PruneSchedule, ScopeKey
from ..inputs import checked_memories, clean_scope, memory_text
from ..sqlite.deletes_sql import forget_where
from ..sqlite.prepared import EMBED_CHUNK
from . import calls, records
from .setup import BACKEND, Mem0Memory, Mem0Settings, check_qdrant
from .worker import Mem0Worker


class Mem0Store(memory_models.MemoryStore):
    """Memories in mem0 on Qdrant, embedded by the host's ``Embedder``."""

    def __init__(
        self, settings: Mem0Settings, embedder: Embedder, *, bounds: MemoryBounds | None = None
    ) -> None:
        """Prepare the store; call ``open`` (or use ``Mem0Store.create``)."""
        self.settings = settings
        self.embedder = embedder
        self.bounds = bounds or MemoryBounds()
        self._schedule = PruneSchedule(self.bounds.check_every)
        self._mem0 = Mem0Worker(settings, embedder)
        self._queries = QueryVectors(embedder, timeout=settings.timeout)
        self._last_created = datetime.min.replace(tzinfo=UTC)

    @classmethod
    async def create(
        cls, settings: Mem0Settings, embedder: Embedder, *, bounds: MemoryBounds | None = None
    ) -> Mem0Store:
        """Open a store (mem0 imported, Qdrant opened, the collection made)."""
        store = cls(settings, embedder, bounds=bounds)
        try:
            await store.open()
        except BaseException:
            await store.close()
            raise
        return store

    async def open(self) -> None:
        """Open Qdrant and mem0 (mem0 imported on its thread)."""
        await self._mem0.open()

    async def check(self) -> BackendCheck:
        """Check mem0 imports, the embedder answers and (a server) Qdrant lets us in."""
        try:
            await self.embedder.embed(["connection check"], "query")
            await self._mem0.run(lambda: check_qdrant(self.settings))
        except MemoryStoreError as err:
            return BackendCheck.failed(err, BACKEND)
        return BackendCheck(backend=BACKEND)

    async def add(self, memories: Sequence[NewMemory]) -> list[MemoryRecord]:
        """Store ``memories``: all or none (states through the state channel)."""
        prepared = [records.prepare(memory) for memory in checked_memories(memories)]
        if not prepared:
            return []
        texts = [one.text for one in prepared]
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_CHUNK):  # within every server's batch limit
            vectors.extend(await self.embedder.embed(texts[start : start + EMBED_CHUNK], "passage"))

        def work(memory: Mem0Memory) -> list[MemoryRecord]:
            """Add each in turn (all or none), then read them back."""
            self._mem0.prime("passage", texts, vectors)
            added = calls.add_all(memory, prepared, self._now)
            kept = [calls.read(memory, record_id) for record_id in added]
            keys = [(m.scope.agent_id, m.scope.environment, m.scope.owner) for m in prepared]
            for key in self._schedule.due(keys):
                self._prune(memory, key)
            return kept

        return await self._mem0.call(work)

    async def rollback(
        self, record_id: str, environment: str = "production"
    ) -> MemoryRecord | None:
        """Retire a current state of ``environment``, restore the one it superseded; return it."""
        if not records.is_record_id(record_id):
            return None
        return await self._mem0.call(
            lambda memory: calls.rollback(memory, record_id, environment, self._now)
        )

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return at most ``query.limit`` records nearest ``query.text``, best first."""
        text = memory_text(query.text)
        scopes = list(dict.fromkeys(clean_scope(scope) for scope in query.scopes))
        limit = bounded(query.limit)
        if not query_terms(text) or not scopes or not query.kinds:
            return []
        extra: records.Metadata = {"kind": sorted(query.kinds)}
        if not query.include_history:
            extra["current"] = True
        wait = self.settings.timeout if query.vector_wait is None else query.vector_wait
        vector = await self._queries.vector(text, wait)
        if vector is None:  # late or failed: mem0 searches by vector only
            return []

        def work(memory: Mem0Memory) -> list[MemoryHit]:
            """Search each scope with this query's vector."""
            self._mem0.prime("query", [text], [vector])
            return calls.search(memory, text, scopes, extra, limit)

        return await self._mem0.call(work)

    async def current_states(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return the current state conclusions of ``scopes``, newest first (bounded)."""
        cleaned = list(dict.fromkeys(clean_scope(scope) for scope in scopes))
        return await self._mem0.call(lambda memory: calls.current_states(memory, cleaned))

    async def get(self, record_id: str, environment: str = "production") -> MemoryRecord | None:
        """Return the record ``record_id`` of ``environment``, current or not."""
        if not records.is_record_id(record_id):
            return None
        return await self._mem0.call(lambda memory: calls.get(memory, record_id, environment))

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = MAX_PAGE
    ) -> ExportPage:
        """Return one page of the records of ``scopes``, superseded ones included, newest first.

        mem0 lists a scope's records unordered: they are read and sorted here.
        """
        cleaned = list(dict.fromkeys(clean_scope(scope) for scope in scopes))
        first, size = page_bounds(offset, limit)
        return await self._mem0.call(lambda memory: calls.export(memory, cleaned, first, size))

    async def forget(self, what: Forget) -> int:
        """Delete what ``what`` names (said at or before ``what.at``), history included."""
        forget_where(what)

        def work(memory: Mem0Memory) -> int:
            """Delete a record and the states it superseded, a statement's records, or a
            person's and/or persona's."""
            if what.record_id is not None:
                return calls.forget_history(memory, what.record_id, what.environment)
            if what.statement is not None:
                return calls.forget_statement(memory, records.statement_filters(what))
            return calls.forget_matching(memory, records.forget_filters(what), what.moment)

        return await self._mem0.call(work)

    async def count(self) -> dict[str, int]:
        """Return record counts by kind and current/retired: figures, never content."""

        def work(memory: Mem0Memory) -> dict[str, int]:
            """Count in Qdrant by payload."""
            if (client := self._mem0.client) is None:
                raise MemoryBackendError("the store is not open", backend=BACKEND, problem="failed")
            return calls.count(client, self.settings.collection)

        return await self._mem0.call(work)

    async def close(self) -> None:
        """Close mem0's history database and the Qdrant client; end the worker thread."""
        self._queries.close()
        await self._mem0.close()

    def _prune(self, memory: Mem0Memory, key: ScopeKey) -> None:
        """Delete the scope's oldest details and summaries beyond their caps (worker thread)."""
        if (client := self._mem0.client) is not None:
            calls.prune_scope(memory, client, self.settings.collection, key, self.bounds)

    def _now(self) -> datetime:
        """Return the store's clock, strictly increasing (export keeps insertion order)."""
        now = max(datetime.now(UTC), self._last_created + timedelta(microseconds=1))
        self._last_created = now
        return now
