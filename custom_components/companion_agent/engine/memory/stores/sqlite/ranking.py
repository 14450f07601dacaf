"""How the embedded store's search ranks: rankings fused by weighted reciprocal rank, and weights.

Rankings are fused by weighted reciprocal rank (RRF; Cormack et al., 2009: ``fuse``).

The product's weights (``SearchSettings()``) were chosen on REALTALK's conversations 1–5
(``benchmarks/memory_recall.py --part tune``); ``SearchSettings.plain()`` is the baseline
the benchmarks compare with: a record's own terms and its vector, fused with equal weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

type Ranking = Literal["keyword", "vector"]
RANKINGS: frozenset[Ranking] = frozenset({"keyword", "vector"})
CANDIDATES = 30
RRF_K = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSettings:
    """How a search ranks: the weight of each field and of each ranking in the fusion."""

    keywords: float = 1.0
    """Weight of the keyword ranking in the fusion."""
    vectors: float = 1.0
    """Weight of the vector ranking in the fusion."""
    context: float = 0.3
    """BM25 weight of the turn said before the record (0: not searched)."""
    context_vectors: float = 1.0
    """Weight of the vectors ranking each record by the question said just before it."""
    hubness: float = 0.35
    """How much of a record's hubness (``vectors``) a vector ranking takes off its cosine."""
    names: float = 3.0
    """BM25 weight of the names the record is about (0: not searched)."""
    time: float = 1.0
    """Weight of each ranking restricted to the time the question names (0: none)."""
    common_words: bool = False
    """Search a question's function words too ("what", "the", "吗")."""
    about: float = 0.5
    """Weight of the keywords restricted to the memories about the names asked of (0: none)."""
    about_vectors: float = 2.0
    """Weight of the vectors restricted to them, the question embedded without the names."""
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
            context_vectors=0.0,
            hubness=0.0,
            names=0.0,
            time=0.0,
            about=0.0,
            about_vectors=0.0,
            common_words=True,
            candidates=CANDIDATES,
            rrf_k=RRF_K,
        )


def fuse(
    rankings: Sequence[Sequence[int]], k: int = RRF_K, weights: Sequence[float] = ()
) -> list[tuple[int, float]]:
    """Fuse rankings of rowids by weighted reciprocal rank (Σ w/(k + rank)); best first.

    ``weights`` pairs with ``rankings`` (1.0 each when empty).
    """
    scores: dict[int, float] = {}
    for index, ranking in enumerate(rankings):
        weight = weights[index] if weights else 1.0
        for rank, rowid in enumerate(ranking, start=1):
            scores[rowid] = scores.get(rowid, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: pair[1], reverse=True)
