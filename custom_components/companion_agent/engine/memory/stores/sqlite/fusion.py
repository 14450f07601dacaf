"""Rankings fused by weighted reciprocal rank (RRF; Cormack et al., 2009)."""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60


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
