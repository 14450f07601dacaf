"""The default memory store: one SQLite file, no server; FTS5 keywords, vectors, a graph.

``EmbeddedStore`` implements ``MemoryStore``; its ``graph`` (an ``EmbeddedGraph`` on the
same file and thread) implements ``GraphStore``. Everything blocking runs on one worker
thread (``SQLiteWorker``). Keyword search is FTS5 + BM25 over segmented text (Chinese and
English, see ``keywords``); when an ``Embedder`` is given, each record also keeps a
float32 vector and a search fuses both rankings by reciprocal rank (see ``search``). An
embedder that fails or is slow never fails a call: the record is stored without a vector
(a background backfill embeds it later, see ``backfill``), the search goes on with
keywords alone.

A state (``kind="state"`` with a topic) is always added through the state channel: the
current state on the same scope and topic retires (kept, with ``valid_until`` and
``superseded_by``). ``forget`` of a person or persona also forgets their graph. Each scope
is kept within ``MemoryBounds`` (see ``bounds`` and ``deletes_sql``).

Forget wins: ``forget`` keeps its tombstone in the same transaction as its deletes, and
``add`` leaves out, in its own transaction, every memory a tombstone refuses (dated at or
before a forget of its scope, its content or the statement it was derived from), so the two
never race. A forget of a statement deletes its records here and its graph facts in the
graph (``EmbeddedGraph.forget``), each in one transaction with the statement's tombstone.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ....errors import CorruptionReporter, EmbeddingError, MemoryStoreError
from ....sqlite import MAX_PENDING, SQLiteWorker
from ... import models as memory_models
from ...embeddings import Embedder
from ...models import (
    MAX_PAGE,
    ExportPage,
    Forget,
    MemoryHit,
    MemoryQuery,
    MemoryRecord,
    MemoryScope,
    NewMemory,
    page_bounds,
)
from ..bounds import MemoryBounds, PruneSchedule
from ..inputs import MAX_BATCH, checked_memories, clean_scope
from . import deletes_sql, records_sql
from .backfill import VectorBackfill
from .deletes_sql import forget_where, prune_records
from .graph import EmbeddedGraph
from .prepared import EMBED_CHUNK, prepare, with_vectors
from .ranking import RANKINGS, Ranking, SearchSettings
from .schema import open_database
from .search import StoreSearch
from .vectors import VectorCache, pack, store_vectors, unembedded

LOGGER = logging.getLogger(__name__)

QUERY_TIMEOUT = 1.5
__all__ = ["MAX_BATCH", "RANKINGS", "EmbeddedStore", "Ranking", "SearchSettings"]


class EmbeddedStore(memory_models.MemoryStore):
    """Memories in one SQLite file, searched by keyword and (with an embedder) by vector."""

    def __init__(
        self,
        path: Path,
        *,
        embedder: Embedder | None = None,
        rankings: frozenset[Ranking] = RANKINGS,
        query_timeout: float = QUERY_TIMEOUT,
        max_pending: int = MAX_PENDING,
        bounds: MemoryBounds | None = None,
        search: SearchSettings | None = None,
        backfill: bool = True,
    ) -> None:
        """Prepare the store at ``path``; call ``open`` (or use ``EmbeddedStore.create``).

        ``rankings`` says which rankings a search fuses (both by default; one alone is for
        comparing them); vectors need an ``embedder``. A query's embedding that takes longer
        than ``query_timeout`` is given up: the search goes on with keywords. ``bounds``
        says how much each scope keeps (see ``bounds``); ``search`` how a search ranks
        (``SearchSettings.plain()`` is plain fusion, for comparing). ``backfill`` runs the
        background embedding of records without a vector (on by default).
        """
        self.path = path
        self._embedder = embedder
        self._worker = SQLiteWorker(
            path,
            opener=open_database,
            failure=MemoryStoreError,
            max_pending=max_pending,
        )
        self.bounds = bounds or MemoryBounds()
        self.graph = EmbeddedGraph(self._worker, self.bounds)
        self._vectors = VectorCache()
        self._schedule = PruneSchedule(self.bounds.check_every)
        self._search = StoreSearch(
            self._worker,
            self._vectors,
            embedder,
            rankings=rankings,
            settings=search or SearchSettings(),
            query_timeout=query_timeout,
        )
        self.backfill = VectorBackfill(self.backfill_vectors)
        self._backfills = backfill

    @property
    def embedder(self) -> Embedder | None:
        """Return the embedder of stored text and queries (None: keywords only)."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder | None) -> None:
        """Embed with ``embedder`` from now on."""
        self._embedder = embedder
        self._search.use(embedder)

    @property
    def query_timeout(self) -> float:
        """Return how long a search waits for its query's embedding at most."""
        return self._search.query_timeout

    @query_timeout.setter
    def query_timeout(self, seconds: float) -> None:
        """Set how long a search waits for its query's embedding at most."""
        self._search.query_timeout = seconds

    @classmethod
    async def create(
        cls,
        path: Path,
        *,
        embedder: Embedder | None = None,
        rankings: frozenset[Ranking] = RANKINGS,
        query_timeout: float = QUERY_TIMEOUT,
        on_corrupt: CorruptionReporter | None = None,
        bounds: MemoryBounds | None = None,
        search: SearchSettings | None = None,
        backfill: bool = True,
    ) -> EmbeddedStore:
        """Open (or create) the store at ``path``; a bad file is moved aside and reported."""
        store = cls(
            path,
            embedder=embedder,
            rankings=rankings,
            query_timeout=query_timeout,
            bounds=bounds,
            search=search,
            backfill=backfill,
        )
        try:
            await store.open(on_corrupt)
        except BaseException:
            await store.close()  # no thread left behind
            raise
        return store

    async def open(self, on_corrupt: CorruptionReporter | None = None) -> None:
        """Open the file on the worker thread; start the backfill when there is an embedder."""
        await self._worker.start(on_corrupt)
        if self.embedder is not None and self._backfills:
            self.backfill.start()

    async def add(self, memories: Sequence[NewMemory]) -> list[MemoryRecord]:
        """Store ``memories`` in one transaction (states through the state channel).

        A memory a tombstone refuses is left out (the records returned are those stored).
        Every ``bounds.check_every`` adds, the scopes written since are pruned to their bounds.
        """
        prepared = [prepare(memory) for memory in checked_memories(memories)]
        if not prepared:
            return []
        prepared = await with_vectors(prepared, self.embedder)
        if self.embedder is not None and any(memory.vector is None for memory in prepared):
            self.backfill.wake()

        def work(db: sqlite3.Connection) -> list[MemoryRecord]:
            """Insert every memory, then read them back as records."""
            now = datetime.now(UTC)
            kept = [
                memory
                for memory in prepared
                if not deletes_sql.refused(db, memory.scope, memory.at, memory.keys)
            ]
            inserted = [records_sql.insert(db, memory, now) for memory in kept]
            rowids = [rowid for rowid, _ in inserted]
            for (rowid, question), memory in zip(inserted, kept, strict=True):
                if memory.kind == "state" and memory.topic_key is not None:
                    self._vectors.invalidate(_key(memory.scope))  # it may retire a record
                elif memory.vector is not None:
                    moment = memory.at.timestamp()
                    row = (rowid, memory.kind, memory.vector, moment, question)
                    self._vectors.append(_key(memory.scope), row)
            found = records_sql.records(db, rowids)
            for scope in self._schedule.due([_key(memory.scope) for memory in kept]):
                if prune_records(db, scope, self.bounds):
                    self._vectors.invalidate(scope)
            return [found[rowid] for rowid in rowids]

        return await self._worker.transaction(work)

    async def rollback(
        self, record_id: str, environment: str = "production"
    ) -> MemoryRecord | None:
        """Retire a current state of ``environment``, restore the one it superseded; return it.

        None when there is no such current state, or it superseded nothing (it is then
        retired all the same).
        """
        return await self._worker.transaction(
            lambda db: records_sql.rollback(db, record_id, environment, self._vectors)
        )

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return at most ``query.limit`` records matching ``query.text``, best first."""
        return await self._search.search(query)

    async def current_states(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return the current state conclusions of ``scopes``, newest first (bounded)."""
        cleaned = [clean_scope(scope) for scope in scopes]
        return await self._worker.run(lambda db: records_sql.current_states(db, cleaned))

    async def get(self, record_id: str, environment: str = "production") -> MemoryRecord | None:
        """Return the record ``record_id`` of ``environment``, current or not."""
        return await self._worker.run(lambda db: records_sql.get(db, record_id, environment))

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = MAX_PAGE
    ) -> ExportPage:
        """Return one page of the records of ``scopes``, superseded ones included, newest first."""
        cleaned = [clean_scope(scope) for scope in scopes]
        first, size = page_bounds(offset, limit)
        return await self._worker.run(lambda db: records_sql.export(db, cleaned, first, size))

    async def forget(self, what: Forget) -> int:
        """Delete what ``what`` names, history included (a person's or persona's graph too).

        A person's or persona's records go if said at or before ``what.at``; a statement's
        go each alone (its graph facts: ``graph.forget``); the tombstone is kept in the same
        transaction, so no later add of an older memory lands.
        """
        forget_where(what)
        return await self._worker.transaction(
            lambda db: deletes_sql.forget(db, what, self._vectors)
        )

    async def backfill_vectors(self, limit: int = EMBED_CHUNK) -> int:
        """Embed up to ``limit`` current records lacking this embedder's vector; say how many.

        Records stored while the embedding server was down, or under another model, get
        their vector here (the store's ``backfill`` calls it in the background). A batch
        the server refuses is embedded one by one, and a text it refuses is marked so it
        is not asked again; an error a retry may cure raises, leaving them for later.
        Returns how many records were taken (embedded or marked).
        """
        if self.embedder is None:
            return 0
        model = self.embedder.model_id
        batch = max(1, min(limit, EMBED_CHUNK))
        missing = await self._worker.run(lambda db: unembedded(db, model, batch))
        if not missing:
            return 0
        try:
            vectors: list[list[float] | None] = list(
                await self.embedder.embed([text for _, _, text, _ in missing], "passage")
            )
        except EmbeddingError as err:
            if err.retryable:
                raise
            vectors = [await self._embed_one(text) for _, _, text, _ in missing]
        packed = [None if vector is None else pack(vector) for vector in vectors]
        await self._worker.transaction(
            lambda db: store_vectors(db, missing, packed, model, self._vectors)
        )
        return len(missing)

    async def _embed_one(self, text: str) -> list[float] | None:
        """Embed one passage; None when the server refuses it (a retryable error raises)."""
        assert self.embedder is not None
        try:
            (vector,) = await self.embedder.embed([text], "passage")
        except EmbeddingError as err:
            if err.retryable:
                raise
            return None
        return vector

    async def count(self) -> dict[str, int]:
        """Return record counts by kind and current/retired, and the graph's sizes."""
        return await self._worker.run(records_sql.counts)

    async def close(self) -> None:
        """Stop the backfill, close the file and end the worker thread (the graph shares them)."""
        await self.backfill.close()
        self._search.close()
        await self._worker.close()


def _key(scope: MemoryScope) -> tuple[str, str, str]:
    """Return the cache key of a scope."""
    return (scope.agent_id, scope.environment, scope.owner)
