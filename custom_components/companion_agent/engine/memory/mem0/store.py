"""A ``MemoryStore`` over mem0 (``mem0ai``) with Qdrant: files in a folder, or a server.

Everything mem0 does is blocking, so it runs on one worker thread owned by the store: one
``Memory`` (and one Qdrant client) per store, every call in turn, each within the timeout
(waiting included). mem0 is imported on that thread on ``open``; a host installs it on
demand (``MEM0_REQUIREMENTS``). See ``mem0_setup`` for telemetry, files and Qdrant, and
``mem0_records`` for how scopes and the state channel map onto mem0.

What differs from the embedded store: search is by vector only (mem0's BM25 needs
fastembed, which downloads its model at run time, and its entity boost spaCy; neither is
installed); mem0 has no transactions, so an ``add`` that fails part way deletes what it
added, supersede/rollback are metadata updates in sequence on the one worker thread, and
tombstones are checked around each write by the caller (``writes``); ``count`` has no
graph figures. A store made while its backend was away opens at its first call after.

Bounds (``MemoryBounds``): every ``check_every`` adds, the scopes written since lose their
oldest details and summaries beyond the caps. Retired states are not pruned (finding a
topic's oldest would list the topic on every check), nor mem0's own ``history.db``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ...errors import MemoryBackendError, MemoryInputError, MemoryStoreError
from ..backend_check import BackendCheck
from ..bounds import MemoryBounds, PruneSchedule, ScopeKey
from ..embeddings import Embedder, InputType
from ..inputs import clean_scope, clean_text, state_memory
from ..keywords import query_terms
from ..sqlite.forgotten_sql import forget_where
from ..types import (
    MAX_PAGE,
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
from . import calls, records
from .setup import (
    BACKEND,
    EmbedderBridge,
    Mem0Memory,
    Mem0Settings,
    check_qdrant,
    import_mem0,
    open_memory,
    qdrant_client,
)
from .setup import backend_error as _error

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

LOGGER = logging.getLogger(__name__)

MAX_BATCH = 500
OPEN_TIMEOUT = 60.0
REOPEN_AFTER = 30.0


class Mem0Store:
    """Memories in mem0 on Qdrant, embedded by the host's ``Embedder``."""

    def __init__(
        self, settings: Mem0Settings, embedder: Embedder, *, bounds: MemoryBounds | None = None
    ) -> None:
        """Prepare the store; call ``open`` (or use ``Mem0Store.create``)."""
        self.settings = settings
        self.embedder = embedder
        self.bounds = bounds or MemoryBounds()
        self._schedule = PruneSchedule(self.bounds.check_every)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem0")
        self._memory: Mem0Memory | None = None
        self._client: QdrantClient | None = None
        self._bridge: EmbedderBridge | None = None
        self._closed = False
        self._last_created = datetime.min.replace(tzinfo=UTC)
        self._opening = asyncio.Lock()
        self._next_open = 0.0

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
        """Learn the embedder's vector size, then open Qdrant and mem0 on the worker."""
        (probe,) = await self.embedder.embed(["dimension probe"], "passage")
        bridge = EmbedderBridge(self.embedder, asyncio.get_running_loop(), self.settings.timeout)
        self._bridge = bridge

        def work() -> None:
            """Open the client and the Memory."""
            import_mem0(self.settings.folder)
            self._client = qdrant_client(self.settings)
            self._memory = open_memory(self.settings, self._client, len(probe), bridge)

        await self._run(work, seconds=max(OPEN_TIMEOUT, self.settings.timeout))

    async def check(self) -> BackendCheck:
        """Check mem0 imports, the embedder answers and (a server) Qdrant lets us in."""
        try:
            await self.embedder.embed(["connection check"], "query")
            await self._run(lambda: check_qdrant(self.settings))
        except MemoryStoreError as err:
            return BackendCheck.failed(err, BACKEND)
        return BackendCheck(backend=BACKEND)

    async def add(self, memories: Sequence[NewMemory]) -> list[MemoryRecord]:
        """Store ``memories``: all or none (states through the state channel)."""
        if len(memories) > MAX_BATCH:
            raise MemoryInputError(f"{len(memories)} memories at once, at most {MAX_BATCH}")
        prepared = [records.prepare(memory) for memory in memories]
        if not prepared:
            return []
        texts = [one.text for one in prepared]
        vectors = await self.embedder.embed(texts, "passage")

        def work(memory: Mem0Memory) -> list[MemoryRecord]:
            """Add each in turn (all or none), then read them back."""
            self._prime("passage", texts, vectors)
            added = calls.add_all(memory, prepared, self._now)
            kept = [calls.read(memory, record_id) for record_id in added]
            keys = [(m.scope.agent_id, m.scope.environment, m.scope.owner) for m in prepared]
            for key in self._schedule.due(keys):
                self._prune(memory, key)
            return kept

        return await self._call(work)

    async def supersede(self, memory: NewMemory) -> MemoryRecord | None:
        """Store a state conclusion; the current one on the same topic and scope retires."""
        return (await self.add([state_memory(memory)]))[0]

    async def rollback(
        self, record_id: str, environment: str = "production"
    ) -> MemoryRecord | None:
        """Retire a current state of ``environment``, restore the one it superseded; return it."""
        if not records.is_record_id(record_id):
            return None
        return await self._call(
            lambda memory: calls.rollback(memory, record_id, environment, self._now)
        )

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return at most ``query.limit`` records nearest ``query.text``, best first."""
        text = clean_text(query.text)
        scopes = list(dict.fromkeys(clean_scope(scope) for scope in query.scopes))
        limit = bounded(query.limit)
        if not query_terms(text) or not scopes or not query.kinds:
            return []
        extra: records.Metadata = {"kind": sorted(query.kinds)}
        if not query.include_history:
            extra["current"] = True
        vectors = await self.embedder.embed([text], "query")

        def work(memory: Mem0Memory) -> list[MemoryHit]:
            """Search each scope with this query's vector."""
            self._prime("query", [text], vectors)
            return calls.search(memory, text, scopes, extra, limit)

        return await self._call(work)

    async def current_states(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return the current state conclusions of ``scopes``, newest first (bounded)."""
        cleaned = list(dict.fromkeys(clean_scope(scope) for scope in scopes))
        return await self._call(lambda memory: calls.current_states(memory, cleaned))

    async def get(self, record_id: str, environment: str = "production") -> MemoryRecord | None:
        """Return the record ``record_id`` of ``environment``, current or not."""
        if not records.is_record_id(record_id):
            return None
        return await self._call(lambda memory: calls.get(memory, record_id, environment))

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = MAX_PAGE
    ) -> ExportPage:
        """Return one page of the records of ``scopes``, superseded ones included, newest first.

        mem0 lists a scope's records unordered: they are read and sorted here.
        """
        cleaned = list(dict.fromkeys(clean_scope(scope) for scope in scopes))
        first, size = page_bounds(offset, limit)
        return await self._call(lambda memory: calls.export(memory, cleaned, first, size))

    async def forget(self, what: Forget) -> int:
        """Delete what ``what`` names (said at or before ``what.at``), history included."""
        forget_where(what)

        def work(memory: Mem0Memory) -> int:
            """Delete a record and the states it superseded, or a person's and/or persona's."""
            if what.record_id is not None:
                return calls.forget_history(memory, what.record_id, what.environment)
            return calls.forget_matching(memory, records.forget_filters(what), what.moment)

        return await self._call(work)

    async def count(self) -> dict[str, int]:
        """Return record counts by kind and current/retired: figures, never content."""

        def work(memory: Mem0Memory) -> dict[str, int]:
            """Count in Qdrant by payload."""
            if self._client is None:
                raise MemoryBackendError("the store is not open", backend=BACKEND, problem="failed")
            return calls.count(self._client, self.settings.collection)

        return await self._call(work)

    async def close(self) -> None:
        """Close mem0's history database and the Qdrant client; end the worker thread."""
        if self._closed:
            return
        self._closed = True

        def work() -> None:
            """Close what is open."""
            memory, client, self._memory, self._client = self._memory, self._client, None, None
            if memory is not None:
                memory.close()
            if client is not None:
                client.close()

        try:
            await self._run(work)
        finally:
            await asyncio.get_running_loop().run_in_executor(None, self._worker.shutdown)

    async def _call[T](self, work: Callable[[Mem0Memory], T]) -> T:
        """Run ``work`` with the open Memory on the worker thread (opening it if need be)."""
        if self._memory is None and not self._closed:
            await self._reopen()

        def bound() -> T:
            """Hand the Memory to ``work``."""
            if self._memory is None:
                raise MemoryBackendError("the store is not open", backend=BACKEND, problem="failed")
            return work(self._memory)

        return await self._run(bound)

    async def _run[T](self, work: Callable[[], T], *, seconds: float | None = None) -> T:
        """Run ``work`` on the worker thread within the timeout; map its failures."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(seconds or self.settings.timeout):
                return await loop.run_in_executor(self._worker, work)
        except TimeoutError as err:
            raise MemoryBackendError(
                "mem0 did not answer in time", backend=BACKEND, problem="cannot_connect"
            ) from err
        except MemoryStoreError:
            raise
        except Exception as err:
            raise _error(err) from err

    async def _reopen(self) -> None:
        """Open the store now unless a try failed within ``REOPEN_AFTER`` s; raise if not."""
        async with self._opening:
            if self._memory is not None:
                return
            loop = asyncio.get_running_loop()
            if loop.time() < self._next_open:
                raise MemoryBackendError("not open yet", backend=BACKEND, problem="cannot_connect")
            self._next_open = loop.time() + REOPEN_AFTER
            await self.open()

    def _prune(self, memory: Mem0Memory, key: ScopeKey) -> None:
        """Delete the scope's oldest details and summaries beyond their caps (worker thread)."""
        if self._client is not None:
            calls.prune_scope(memory, self._client, self.settings.collection, key, self.bounds)

    def _prime(self, side: InputType, texts: list[str], vectors: list[list[float]]) -> None:
        """Hand the bridge this call's vectors (on the worker thread)."""
        if self._bridge is not None:
            self._bridge.prime(side, texts, vectors)

    def _now(self) -> datetime:
        """Return the store's clock, strictly increasing (export keeps insertion order)."""
        now = max(datetime.now(UTC), self._last_created + timedelta(microseconds=1))
        self._last_created = now
        return now
