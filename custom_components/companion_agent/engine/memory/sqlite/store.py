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
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from ...errors import CorruptionReporter
from .. import types as memory_types
from ..bounds import MemoryBounds, PruneSchedule
from ..embeddings import Embedder
from ..inputs import MAX_BATCH, checked_memories, clean_scope, memory_text
from ..keywords import match_expression
from ..types import (
    Forget,
    MemoryHit,
    MemoryQuery,
    MemoryRecord,
    MemoryScope,
    NewMemory,
    bounded,
)
from . import graph_sql, records_sql
from .graph import EmbeddedGraph, forget_where
from .prepared import prepare, query_vector, with_vectors
from .pruning import prune_records
from .vectors import VectorCache, fuse, pack
from .worker import MAX_PENDING, SQLiteWorker

QUERY_TIMEOUT = 1.5
type Ranking = Literal["keyword", "vector"]
RANKINGS: frozenset[Ranking] = frozenset({"keyword", "vector"})
CANDIDATES = 30


class EmbeddedStore(memory_types.MemoryStore):
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

        Every ``bounds.check_every`` adds, the scopes written since are pruned to their bounds.
        """
        prepared = [prepare(memory) for memory in checked_memories(memories)]
        if not prepared:
            return []
        prepared = await with_vectors(prepared, self.embedder)

        def work(db: sqlite3.Connection) -> list[MemoryRecord]:
            """Insert every memory, then read them back as records."""
            now = datetime.now(UTC)
            rowids = [records_sql.insert(db, memory, now) for memory in prepared]
            for rowid, memory in zip(rowids, prepared, strict=True):
                if memory.kind == "state" and memory.topic_key is not None:
                    self._vectors.invalidate(_key(memory.scope))  # it may retire a record
                elif memory.vector is not None:
                    self._vectors.append(_key(memory.scope), rowid, memory.kind, memory.vector)
            found = records_sql.records(db, rowids)
            for scope in self._schedule.due([_key(memory.scope) for memory in prepared]):
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

        def work(db: sqlite3.Connection) -> MemoryRecord | None:
            """Retire the record, restore its predecessor, read the predecessor back."""
            found = records_sql.by_id(db, record_id)
            if found is None or found[0].kind != "state" or not found[0].current:
                return None
            if found[0].scope.environment != environment:  # never across environments
                return None
            record, previous = found
            now = records_sql.iso(datetime.now(UTC))
            db.execute("UPDATE memories SET valid_until = ? WHERE id = ?", (now, record.id))
            self._vectors.invalidate(_key(record.scope))
            if previous is None:
                return None
            db.execute(
                "UPDATE memories SET valid_until = NULL, superseded_by = NULL WHERE id = ?",
                (previous,),
            )
            restored = records_sql.by_id(db, previous)
            return None if restored is None else restored[0]

        return await self._worker.transaction(work)

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return at most ``query.limit`` records matching ``query.text``, best first."""
        text = memory_text(query.text)
        scopes = tuple(clean_scope(scope) for scope in query.scopes)
        limit = bounded(query.limit)
        expression = match_expression(text)
        if expression is None or not scopes or not query.kinds:
            return []
        probe: bytes | None = None
        if self.embedder is not None and "vector" in self.rankings:
            probe = await query_vector(self.embedder, text, self.query_timeout)
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
        return await self._worker.run(lambda db: records_sql.current_states(db, cleaned))

    async def export(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return every record of ``scopes``, superseded ones included, oldest first."""
        cleaned = [clean_scope(scope) for scope in scopes]
        return await self._worker.run(lambda db: records_sql.export(db, cleaned))

    async def forget(self, what: Forget) -> int:
        """Delete what ``what`` names, history included (a person's or persona's graph too)."""
        where, params = forget_where(what)

        def work(db: sqlite3.Connection) -> int:
            """Delete the records (and graph), drop their scopes' cached vectors."""
            if what.record_id is not None:
                gone = records_sql.delete_history(db, what.record_id, what.environment)
            else:
                graph_sql.forget(db, where, params)
                gone = records_sql.delete(db, where, params)
            for agent, environment, owner in set(gone):
                self._vectors.invalidate((agent, environment, owner))
            return len(gone)

        return await self._worker.transaction(work)

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
        vectors = await self.embedder.embed([text for _, text, _ in missing], "passage")

        def work(db: sqlite3.Connection) -> int:
            """Store the vectors; drop the scopes' cached matrices."""
            for (rowid, _, scope), vector in zip(missing, vectors, strict=True):
                db.execute(
                    "UPDATE memories SET vector = ?, vector_model = ? WHERE rowid = ?",
                    (pack(vector), model, rowid),
                )
                self._vectors.invalidate(scope)
            return len(missing)

        return await self._worker.transaction(work)

    async def count(self) -> dict[str, int]:
        """Return record counts by kind and current/retired, and the graph's sizes."""
        return await self._worker.run(records_sql.counts)

    async def close(self) -> None:
        """Close the file and end the worker thread (the graph shares them)."""
        await self._worker.close()


def _key(scope: MemoryScope) -> tuple[str, str, str]:
    """Return the cache key of a scope."""
    return (scope.agent_id, scope.environment, scope.owner)
