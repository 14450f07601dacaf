"""The default memory store: one SQLite file, no server; FTS5 keywords, vectors, a graph.

``EmbeddedStore`` implements ``MemoryStore``; its ``graph`` (an ``EmbeddedGraph`` on the
same file and thread) implements ``GraphStore``. Everything blocking runs on one worker
thread (``SQLiteWorker``). Keyword search is FTS5 + BM25 over segmented text (Chinese and
English, see ``keywords``); when an ``Embedder`` is given, each record also keeps a
float32 vector and a search fuses both rankings by reciprocal rank. An embedder that
fails or is slow never fails a call: the record is stored without a vector, the search
goes on with keywords alone.

A state (``kind="state"`` with a topic) is always added through the state channel: the
current state on the same scope and topic retires (kept, with ``valid_until`` and
``superseded_by``). ``forget`` of a person or persona also forgets their graph. Each scope
is kept within ``MemoryBounds`` (see ``bounds`` and ``sqlite_pruning``).

Forget wins: ``forget`` keeps its tombstone in the same transaction as its deletes, and
``add`` leaves out, in its own transaction, every memory a tombstone refuses (dated at or
before a forget of its scope or its content), so the two never race.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from ...errors import CorruptionReporter, EmbeddingError, MemoryInputError
from ..bounds import MemoryBounds, PruneSchedule
from ..embeddings import Embedder
from ..inputs import clean_scope, clean_text, state_memory
from ..keywords import match_expression
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
from . import forgotten_sql, records_sql, states_sql
from .forgotten_sql import forget_where
from .graph import EmbeddedGraph
from .prepared import prepare, with_vectors
from .pruning import prune_records
from .vectors import VectorCache, fuse, pack
from .worker import MAX_PENDING, SQLiteWorker

LOGGER = logging.getLogger(__name__)

MAX_BATCH = 500
QUERY_TIMEOUT = 1.5
type Ranking = Literal["keyword", "vector"]
RANKINGS: frozenset[Ranking] = frozenset({"keyword", "vector"})
CANDIDATES = 30


class EmbeddedStore:
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
    ) -> None:
        """Prepare the store at ``path``; call ``open`` (or use ``EmbeddedStore.create``).

        ``rankings`` says which rankings a search fuses (both by default; one alone is for
        comparing them); vectors need an ``embedder``. A query's embedding that takes longer
        than ``query_timeout`` is given up: the search goes on with keywords. ``bounds``
        says how much each scope keeps (see ``bounds``).
        """
        self.path = path
        self.embedder = embedder
        self.rankings = rankings
        self.query_timeout = query_timeout
        self._worker = SQLiteWorker(path, max_pending=max_pending)
        self.bounds = bounds or MemoryBounds()
        self.graph = EmbeddedGraph(self._worker, self.bounds)
        self._vectors = VectorCache()
        self._schedule = PruneSchedule(self.bounds.check_every)

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
    ) -> EmbeddedStore:
        """Open (or create) the store at ``path``; a bad file is moved aside and reported."""
        store = cls(
            path, embedder=embedder, rankings=rankings, query_timeout=query_timeout, bounds=bounds
        )
        await store.open(on_corrupt)
        return store

    async def open(self, on_corrupt: CorruptionReporter | None = None) -> None:
        """Open the file on the worker thread."""
        await self._worker.start(on_corrupt)

    async def add(self, memories: Sequence[NewMemory]) -> list[MemoryRecord]:
        """Store ``memories`` in one transaction (states through the state channel).

        A memory a tombstone refuses is left out (the records returned are those stored).
        Every ``bounds.check_every`` adds, the scopes written since are pruned to their bounds.
        """
        if len(memories) > MAX_BATCH:
            raise MemoryInputError(f"{len(memories)} memories at once, at most {MAX_BATCH}")
        prepared = [prepare(memory) for memory in memories]
        if not prepared:
            return []
        prepared = await with_vectors(prepared, self.embedder)

        def work(db: sqlite3.Connection) -> list[MemoryRecord]:
            """Insert every memory, then read them back as records."""
            now = datetime.now(UTC)
            kept = [
                memory
                for memory in prepared
                if not forgotten_sql.refused(db, memory.scope, memory.at, [memory.key])
            ]
            rowids = [records_sql.insert(db, memory, now) for memory in kept]
            for rowid, memory in zip(rowids, kept, strict=True):
                if memory.kind == "state" and memory.topic_key is not None:
                    self._vectors.invalidate(_key(memory.scope))  # it may retire a record
                elif memory.vector is not None:
                    self._vectors.append(_key(memory.scope), rowid, memory.kind, memory.vector)
            found = records_sql.records(db, rowids)
            for scope in self._schedule.due([_key(memory.scope) for memory in kept]):
                if prune_records(db, scope, self.bounds):
                    self._vectors.invalidate(scope)
            return [found[rowid] for rowid in rowids]

        return await self._worker.transaction(work)

    async def supersede(self, memory: NewMemory) -> MemoryRecord | None:
        """Store a state conclusion; the current one on the same topic and scope retires.

        None when a tombstone refuses it (it was said before a forget).
        """
        stored = await self.add([state_memory(memory)])
        return stored[0] if stored else None

    async def rollback(
        self, record_id: str, environment: str = "production"
    ) -> MemoryRecord | None:
        """Retire a current state of ``environment``, restore the one it superseded; return it.

        None when there is no such current state, or it superseded nothing (it is then
        retired all the same).
        """
        return await self._worker.transaction(
            lambda db: states_sql.rollback(db, record_id, environment, self._vectors)
        )

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return at most ``query.limit`` records matching ``query.text``, best first."""
        text = clean_text(query.text)
        scopes = tuple(clean_scope(scope) for scope in query.scopes)
        limit = bounded(query.limit)
        expression = match_expression(text)
        if expression is None or not scopes or not query.kinds:
            return []
        probe: bytes | None = None
        if self.embedder is not None and "vector" in self.rankings:
            try:
                async with asyncio.timeout(self.query_timeout):
                    (vector,) = await self.embedder.embed([text], "query")
                probe = pack(vector)
            except TimeoutError:
                LOGGER.warning("Memory search goes on without vectors: embedding was too slow")
            except EmbeddingError as err:
                LOGGER.warning("Memory search goes on without vectors: %s", err)
        candidates = max(CANDIDATES, limit * 3)

        def work(db: sqlite3.Connection) -> list[MemoryHit]:
            """Rank by keywords and vectors, fuse, keep what the query admits."""
            rankings: list[list[int]] = []
            if "keyword" in self.rankings:
                rankings.append(
                    records_sql.keyword_ranking(
                        db,
                        expression,
                        scopes=scopes,
                        kinds=query.kinds,
                        include_history=query.include_history,
                        limit=candidates,
                    )
                )
            if probe is not None:
                rankings.append(self._vector_ranking(db, query, scopes, probe, candidates))
            fused = fuse(rankings)
            found = records_sql.records(db, [rowid for rowid, _ in fused])
            hits = [
                MemoryHit(record=found[rowid], score=score, channel=found[rowid].kind)
                for rowid, score in fused
                if rowid in found
            ]
            return hits[:limit]

        return await self._worker.run(work)

    def _vector_ranking(
        self,
        db: sqlite3.Connection,
        query: MemoryQuery,
        scopes: Sequence[MemoryScope],
        probe: bytes,
        candidates: int,
    ) -> list[int]:
        """Return rowids by cosine to ``probe``, of the kinds and validity the query admits."""
        model = self.embedder.model_id if self.embedder is not None else ""
        history = query.include_history
        cache = VectorCache() if history else self._vectors

        def load(scope: tuple[str, str, str]) -> Iterable[tuple[int, str, bytes]]:
            """Read a scope's vectors of this model (retired ones only for history)."""
            return records_sql.vector_rows(db, scope, model, history=history)

        keys = [_key(scope) for scope in scopes]
        nearest = cache.nearest(keys, probe, candidates, load, query.kinds)
        return [rowid for rowid, _ in nearest]

    async def current_states(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return the current state conclusions of ``scopes``, newest first (bounded)."""
        cleaned = [clean_scope(scope) for scope in scopes]
        return await self._worker.run(lambda db: states_sql.current_states(db, cleaned))

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

        A person's or persona's records go if said at or before ``what.at``; the tombstone
        is kept in the same transaction, so no later add of an older memory lands.
        """
        forget_where(what)
        return await self._worker.transaction(
            lambda db: forgotten_sql.forget(db, what, self._vectors)
        )

    async def backfill_vectors(self, limit: int = 64) -> int:
        """Embed up to ``limit`` current records that lack this embedder's vector; say how many.

        Records stored while the embedding server was down, or under another model, get
        their vector here (call it now and then); an ``EmbeddingError`` leaves them as they
        are for the next call.
        """
        if self.embedder is None:
            return 0
        model = self.embedder.model_id
        batch = max(1, min(limit, MAX_BATCH))
        missing = await self._worker.run(lambda db: records_sql.unembedded(db, model, batch))
        if not missing:
            return 0
        vectors = await self.embedder.embed([text for _, _, text, _ in missing], "passage")

        packed = [pack(vector) for vector in vectors]
        return await self._worker.transaction(
            lambda db: records_sql.store_vectors(db, missing, packed, model, self._vectors)
        )

    async def count(self) -> dict[str, int]:
        """Return record counts by kind and current/retired, and the graph's sizes."""
        return await self._worker.run(records_sql.counts)

    async def close(self) -> None:
        """Close the file and end the worker thread (the graph shares them)."""
        await self._worker.close()


def _key(scope: MemoryScope) -> tuple[str, str, str]:
    """Return the cache key of a scope."""
    return (scope.agent_id, scope.environment, scope.owner)
