"""The embedded store's search: keywords at once, vectors when they come in time, fused.

A search starts its keyword ranking on the worker thread and the query's embedding at the
same time. Keywords (FTS5, BM25 over the record's own terms, the turn said before it in
its conversation, and the names it is about) answer in milliseconds, their records read
in the same trip to the thread; the query's vector is waited for only until
``MemoryQuery.vector_wait`` (the store's query timeout when unset); when it comes, the
nearest records by cosine join in a second trip; when it is late, the keywords' answer is
returned as it is and the embedding goes on for the next search of the same text.

A question that names a time ("on 29 Dec 2023", "in June", "last week", "上个月", see
``when``) adds a ranking of each kind restricted to the memories said within it: those
rise, the others stay. Rankings are fused by weighted reciprocal rank
(``SearchSettings``; the weights were chosen on a held-out split of a public
conversation set, see ``benchmarks/memory_recall.py``).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ...sqlite import SQLiteWorker
from ..embeddings import Embedder
from ..inputs import clean_scope, memory_text
from ..keywords import match_expression
from ..query_vectors import QueryVectors
from ..types import MemoryHit, MemoryQuery, MemoryScope, bounded
from ..when import TimeSpan, asked_about
from . import records_sql, vectors_sql
from .vectors import RRF_K, Span, VectorCache, VectorRow, fuse, pack

type Ranking = Literal["keyword", "vector"]
RANKINGS: frozenset[Ranking] = frozenset({"keyword", "vector"})
CANDIDATES = 30


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSettings:
    """How a search ranks: the weight of each field and of each ranking in the fusion."""

    keywords: float = 1.0
    """Weight of the keyword ranking in the fusion."""
    vectors: float = 0.35
    """Weight of the vector ranking in the fusion."""
    context: float = 0.3
    """BM25 weight of the turn said before the record (0: not searched)."""
    names: float = 3.0
    """BM25 weight of the names the record is about (0: not searched)."""
    time: float = 1.0
    """Weight of each ranking restricted to the time the question names (0: none)."""
    common_words: bool = False
    """Search a question's function words too ("what", "the", "吗")."""
    neighbours: float = 0.0
    """Weight of the ranking of the turns said just after and before the best hits."""
    hops: int = 10
    """How many of the best hits lend their neighbours."""
    candidates: int = 100
    """How long each ranking is before the fusion (at least 3 × the hits asked for)."""
    rrf_k: int = 10
    """Reciprocal rank's k: lower lets the top of each ranking count more."""

    @classmethod
    def plain(cls) -> SearchSettings:
        """Return plain fusion: the record's own terms and its vector, equal weights."""
        return cls(
            vectors=1.0,
            context=0.0,
            names=0.0,
            time=0.0,
            common_words=True,
            candidates=CANDIDATES,
            rrf_k=RRF_K,
        )


class StoreSearch:
    """Searches of one embedded store (its worker thread, vector cache and embedder)."""

    def __init__(
        self,
        worker: SQLiteWorker,
        vectors: VectorCache,
        embedder: Embedder | None,
        *,
        rankings: frozenset[Ranking],
        settings: SearchSettings,
        query_timeout: float,
    ) -> None:
        """Search through ``worker`` and ``vectors``; embed queries with ``embedder``."""
        self._worker = worker
        self._vectors = vectors
        self.rankings = rankings
        self.settings = settings
        self._query_timeout = query_timeout
        self._embedder: Embedder | None = None
        self._queries: QueryVectors | None = None
        self.use(embedder)

    @property
    def query_timeout(self) -> float:
        """Return how long a query's embedding may take at most."""
        return self._query_timeout

    @query_timeout.setter
    def query_timeout(self, seconds: float) -> None:
        """Let a query's embedding take at most ``seconds`` from now on."""
        self._query_timeout = seconds
        self.use(self._embedder)

    def use(self, embedder: Embedder | None) -> None:
        """Embed queries with ``embedder`` from now on (None: keywords only)."""
        if self._queries is not None:
            self._queries.close()
        self._embedder = embedder
        self._queries = (
            QueryVectors(embedder, timeout=self.query_timeout)
            if embedder is not None and "vector" in self.rankings
            else None
        )

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return at most ``query.limit`` records matching ``query.text``, best first."""
        text = memory_text(query.text)
        scopes = tuple(clean_scope(scope) for scope in query.scopes)
        limit = bounded(query.limit)
        expression = match_expression(text, common=self.settings.common_words)
        if expression is None or not scopes or not query.kinds:
            return []
        span = asked_about(text, query.asked_at) if self.settings.time > 0 else None
        candidates = max(self.settings.candidates, limit * 3)
        wait = self.query_timeout if query.vector_wait is None else query.vector_wait
        probe = (
            asyncio.ensure_future(self._queries.vector(text, wait))
            if self._queries is not None
            else None
        )

        def ranked(
            db: sqlite3.Connection, lists: list[tuple[list[int], float]], vector: bytes | None
        ) -> list[MemoryHit]:
            """Add the vector rankings when there is a vector, fuse, read the records back."""
            lists = list(lists)
            if vector is not None:
                lists.extend(
                    self._vector_rankings(
                        db,
                        query=query,
                        scopes=scopes,
                        probe=vector,
                        span=span,
                        candidates=candidates,
                    )
                )
            fused = fuse(
                [ranking for ranking, _ in lists],
                k=self.settings.rrf_k,
                weights=[w for _, w in lists],
            )
            if self.settings.neighbours > 0 and fused and "detail" in query.kinds:
                best = [rowid for rowid, _ in fused[: self.settings.hops]]
                lists.append((records_sql.neighbours(db, best), self.settings.neighbours))
                fused = fuse(
                    [ranking for ranking, _ in lists],
                    k=self.settings.rrf_k,
                    weights=[w for _, w in lists],
                )
            found = records_sql.records(db, [rowid for rowid, _ in fused[:limit]])
            return [
                MemoryHit(record=found[rowid], score=score, channel=found[rowid].kind)
                for rowid, score in fused[:limit]
                if rowid in found
            ]

        def keywords(
            db: sqlite3.Connection,
        ) -> tuple[list[tuple[list[int], float]], list[MemoryHit]]:
            """Rank by keywords; read the keywords' answer too, ready if the vector is late."""
            lists = self._keyword_rankings(
                db, query=query, scopes=scopes, expression=expression, span=span,
                candidates=candidates,
            )  # fmt: skip
            return lists, ranked(db, lists, None)

        try:
            keyword_lists, keyword_hits = await self._worker.run(keywords)
            vector = await probe if probe is not None else None
        finally:
            if probe is not None and not probe.done():
                probe.cancel()
        if vector is None:
            return keyword_hits  # no further trip to the thread: the answer is ready
        packed = pack(vector)
        return await self._worker.run(lambda db: ranked(db, keyword_lists, packed))

    def _keyword_rankings(
        self,
        db: sqlite3.Connection,
        *,
        query: MemoryQuery,
        scopes: Sequence[MemoryScope],
        expression: str,
        span: TimeSpan | None,
        candidates: int,
    ) -> list[tuple[list[int], float]]:
        """Return the keyword ranking (and the one within ``span``), each with its weight."""
        if "keyword" not in self.rankings:
            return []
        weights = (1.0, self.settings.context, self.settings.names)
        spans: list[tuple[TimeSpan | None, float]] = [(None, self.settings.keywords)]
        if span is not None:
            spans.append((span, self.settings.keywords * self.settings.time))
        return [
            (
                records_sql.keyword_ranking(
                    db,
                    expression,
                    scopes=scopes,
                    kinds=query.kinds,
                    include_history=query.include_history,
                    limit=candidates,
                    weights=weights,
                    span=None if within is None else _iso(within),
                ),
                weight,
            )
            for within, weight in spans
        ]

    def _vector_rankings(
        self,
        db: sqlite3.Connection,
        *,
        query: MemoryQuery,
        scopes: Sequence[MemoryScope],
        probe: bytes,
        span: TimeSpan | None,
        candidates: int,
    ) -> list[tuple[list[int], float]]:
        """Return rowids by cosine to ``probe`` (and within ``span``), each with its weight."""
        model = self._embedder.model_id if self._embedder is not None else ""
        history = query.include_history
        cache = VectorCache() if history else self._vectors

        def load(scope: tuple[str, str, str]) -> Iterable[VectorRow]:
            """Read a scope's vectors of this model (retired ones only for history)."""
            return vectors_sql.vector_rows(db, scope, model, history=history)

        keys = [(scope.agent_id, scope.environment, scope.owner) for scope in scopes]
        spans: list[tuple[Span | None, float]] = [(None, self.settings.vectors)]
        if span is not None:
            seconds = (span.start.timestamp(), span.end.timestamp())
            spans.append((seconds, self.settings.vectors * self.settings.time))
        found: list[tuple[list[int], float]] = []
        for within, weight in spans:
            nearest = cache.nearest(keys, probe, candidates, load, query.kinds, span=within)
            found.append(([rowid for rowid, _ in nearest], weight))
        return found

    def close(self) -> None:
        """Cancel query embeddings still under way."""
        if self._queries is not None:
            self._queries.close()


def _iso(span: TimeSpan) -> tuple[str, str]:
    """Return a span as the ISO times records are stored with."""
    return records_sql.iso(span.start), records_sql.iso(span.end)
