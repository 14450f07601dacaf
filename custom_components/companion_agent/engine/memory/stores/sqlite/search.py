"""The embedded store's search: keywords at once, vectors when they come in time, fused.

A search starts its keyword ranking on the worker thread and the query's embedding at the
same time. Keywords (FTS5, BM25 over the record's own terms, the turn said before it in
its conversation, and the names it is about) answer in milliseconds, their records read
in the same trip to the thread; the query's vector is waited for only until
``MemoryQuery.vector_wait`` (the store's query timeout when unset); when it comes, the
nearest records by cosine join in a second trip (and the records said just after a
question near it: an answer is found by the meaning of its question); when it is late,
the keywords' answer is returned as it is and the embedding goes on for the next search
of the same text.

A question that names someone the memories are about ("What drinks does Nicolas like?",
see ``about``) adds a keyword ranking and a vector ranking restricted to the memories about
them, the name left out (its embedding starts as soon as the keyword trip has found the
name, and joins only when it comes in time).

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

from ....sqlite import SQLiteWorker
from ...embeddings import Embedder
from ...models import MemoryHit, MemoryQuery, MemoryScope, bounded
from ...retrieval.keywords import COMMON_WORDS, match_expression, query_terms
from ...retrieval.query_vectors import QueryVectors
from ...when import TimeSpan, asked_about
from ..inputs import clean_scope, memory_text
from . import about, records_sql, vectors_sql
from .fusion import fuse
from .search_settings import Ranking, SearchSettings
from .vectors import Span, VectorCache, VectorRow, pack


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
        deadline = asyncio.get_running_loop().time() + wait
        probe = (
            asyncio.ensure_future(self._queries.vector(text, wait))
            if self._queries is not None
            else None
        )
        words = [term for term in query_terms(text) if term not in COMMON_WORDS]
        restricts_vectors = self._queries is not None and self.settings.about_vectors > 0
        asks_about = self.settings.about > 0 or restricts_vectors

        def ranked(
            db: sqlite3.Connection, lists: list[tuple[list[int], float]], vectors: _Probes
        ) -> list[MemoryHit]:
            """Add the vector rankings when there are vectors, fuse, read the records back."""
            lists = list(lists)
            lists.extend(
                self._vector_rankings(
                    db,
                    query=query,
                    scopes=scopes,
                    probes=vectors,
                    span=span,
                    candidates=candidates,
                )
            )
            fused = self._fuse(lists)
            if self.settings.neighbours > 0 and fused and "detail" in query.kinds:
                best = [rowid for rowid, _ in fused[: self.settings.hops]]
                lists.append((records_sql.neighbours(db, best), self.settings.neighbours))
                fused = self._fuse(lists)
            found = records_sql.records(db, [rowid for rowid, _ in fused[:limit]])
            return [
                MemoryHit(record=found[rowid], score=score, channel=found[rowid].kind)
                for rowid, score in fused[:limit]
                if rowid in found
            ]

        def keywords(db: sqlite3.Connection) -> _KeywordAnswer:
            """Rank by keywords; read the keywords' answer too, ready if the vector is late."""
            names = about.names_in(db, words, scopes) if asks_about else []
            among = about.about(db, names) if names and restricts_vectors else frozenset()
            lists = self._keyword_rankings(
                db, query=query, scopes=scopes, expression=expression, span=span,
                candidates=candidates, names=names, others=[w for w in words if w not in names],
            )  # fmt: skip
            return lists, ranked(db, lists, _Probes()), names, among

        aside: asyncio.Future[list[float] | None] | None = None
        try:
            keyword_lists, keyword_hits, names, among = await self._worker.run(keywords)
            if among and self._queries is not None:
                remaining = deadline - asyncio.get_running_loop().time()
                aside = asyncio.ensure_future(
                    self._queries.vector(about.without(text, names), remaining)
                )
            vector = await probe if probe is not None else None
            about_vector = await aside if aside is not None else None
        finally:
            for pending in (probe, aside):
                if pending is not None and not pending.done():
                    pending.cancel()
        if vector is None and about_vector is None:
            return keyword_hits  # no further trip to the thread: the answer is ready
        probes = _Probes(
            whole=None if vector is None else pack(vector),
            about=None if about_vector is None else pack(about_vector),
            among=among,
        )
        return await self._worker.run(lambda db: ranked(db, keyword_lists, probes))

    def _fuse(self, lists: Sequence[tuple[list[int], float]]) -> list[tuple[int, float]]:
        """Fuse weighted rankings by reciprocal rank."""
        return fuse([r for r, _ in lists], k=self.settings.rrf_k, weights=[w for _, w in lists])

    def _keyword_rankings(
        self,
        db: sqlite3.Connection,
        *,
        query: MemoryQuery,
        scopes: Sequence[MemoryScope],
        expression: str,
        span: TimeSpan | None,
        candidates: int,
        names: Sequence[str],
        others: Sequence[str],
    ) -> list[tuple[list[int], float]]:
        """Return the keyword rankings (whole, within ``span``, about ``names``), weighted."""
        if "keyword" not in self.rankings:
            return []
        weights = (1.0, self.settings.context, self.settings.names)
        asked: list[tuple[str, tuple[float, float, float], TimeSpan | None, str | None, float]]
        asked = [(expression, weights, None, None, self.settings.keywords)]
        if span is not None:
            asked.append(
                (expression, weights, span, None, self.settings.keywords * self.settings.time)
            )
        if names and others and self.settings.about > 0:
            words = " OR ".join(f'"{word}"' for word in others)
            restricted = (1.0, self.settings.context, 0.0)
            weight = self.settings.keywords * self.settings.about
            asked.append((words, restricted, None, about.names_expression(names), weight))
        return [
            (
                records_sql.keyword_ranking(
                    db,
                    match,
                    scopes=scopes,
                    kinds=query.kinds,
                    include_history=query.include_history,
                    limit=candidates,
                    weights=columns,
                    span=None if within is None else _iso(within),
                    about=subject,
                ),
                weight,
            )
            for match, columns, within, subject, weight in asked
        ]

    def _vector_rankings(
        self,
        db: sqlite3.Connection,
        *,
        query: MemoryQuery,
        scopes: Sequence[MemoryScope],
        probes: _Probes,
        span: TimeSpan | None,
        candidates: int,
    ) -> list[tuple[list[int], float]]:
        """Return rowids by cosine to the probes (within ``span``, about names), weighted."""
        model = self._embedder.model_id if self._embedder is not None else ""
        history = query.include_history
        cache = VectorCache() if history else self._vectors

        def load(scope: tuple[str, str, str]) -> Iterable[VectorRow]:
            """Read a scope's vectors of this model (retired ones only for history)."""
            return vectors_sql.vector_rows(db, scope, model, history=history)

        keys = [(scope.agent_id, scope.environment, scope.owner) for scope in scopes]
        asked: list[tuple[bytes, Span | None, frozenset[int] | None, bool, float]] = []
        weight = self.settings.vectors
        if probes.whole is not None:
            asked.append((probes.whole, None, None, False, weight))
            if span is not None:
                seconds = (span.start.timestamp(), span.end.timestamp())
                asked.append((probes.whole, seconds, None, False, weight * self.settings.time))
            if self.settings.context_vectors > 0 and "detail" in query.kinds:
                asked.append(
                    (probes.whole, None, None, True, weight * self.settings.context_vectors)
                )
        if probes.about is not None and probes.among:
            asked.append(
                (probes.about, None, probes.among, False, weight * self.settings.about_vectors)
            )
        found: list[tuple[list[int], float]] = []
        for probe, within, among, before, weight in asked:
            nearest = cache.nearest(
                keys, probe, candidates, load, query.kinds, span=within, among=among,
                before=before, hubness=self.settings.hubness,
            )  # fmt: skip
            found.append(([rowid for rowid, _ in nearest], weight))
        return found

    def close(self) -> None:
        """Cancel query embeddings still under way."""
        if self._queries is not None:
            self._queries.close()


@dataclass(frozen=True, slots=True)
class _Probes:
    """The query's vectors that came in time: whole, and without the names it is about."""

    whole: bytes | None = None
    about: bytes | None = None
    among: frozenset[int] = frozenset()
    """The rowids of the memories about those names."""


type _KeywordAnswer = tuple[
    list[tuple[list[int], float]], list[MemoryHit], list[str], frozenset[int]
]


def _iso(span: TimeSpan) -> tuple[str, str]:
    """Return a span as the ISO times records are stored with."""
    return records_sql.iso(span.start), records_sql.iso(span.end)
