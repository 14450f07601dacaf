"""Vectors: packing, cosine top-k with and without numpy, the cache's bound, RRF."""

import math
import random

import pytest

from custom_components.companion_agent.engine.memory.stores.sqlite import vectors
from custom_components.companion_agent.engine.memory.stores.sqlite.ranking import fuse
from custom_components.companion_agent.engine.memory.stores.sqlite.vectors import (
    VectorCache,
    VectorRow,
    pack,
    unpack,
)

SCOPE = ("nova", "production", "household")


def rows(count: int, dim: int = 8, seed: int = 3) -> list[VectorRow]:
    """Return ``count`` random stored vectors, every third a state, said an hour apart."""
    rng = random.Random(seed)
    return [
        (
            n,
            "state" if n % 3 == 0 else "detail",
            pack([rng.gauss(0, 1) for _ in range(dim)]),
            3600.0 * n,
            None,
        )
        for n in range(count)
    ]


def test_pack_normalises_and_round_trips() -> None:
    """Test that a packed vector has unit length and four bytes per value."""
    blob = pack([3.0, 4.0])
    assert len(blob) == 8
    assert list(unpack(blob)) == pytest.approx([0.6, 0.8])
    assert list(unpack(pack([0.0, 0.0]))) == [0.0, 0.0]


def test_nearest_ranks_by_cosine_and_keeps_to_kinds() -> None:
    """Test top-k against a brute-force ranking, for details only."""
    stored = rows(200)
    probe = pack([1.0] * 8)
    cache = VectorCache()
    got = cache.nearest([SCOPE], probe, 10, lambda scope: stored, {"detail"})
    expected = sorted(
        (
            (rowid, math.fsum(a * b for a, b in zip(unpack(blob), unpack(probe), strict=True)))
            for rowid, kind, blob, _, _ in stored
            if kind == "detail"
        ),
        key=lambda pair: pair[1],
        reverse=True,
    )[:10]
    assert [rowid for rowid, _ in got] == [rowid for rowid, _ in expected]
    assert [score for _, score in got] == pytest.approx([score for _, score in expected], abs=1e-5)


def test_the_pure_python_path_ranks_like_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test that without numpy (not always installed) the same rowids come back."""
    stored = rows(100)
    probe = pack([0.5, -1.0, 2.0, 0.0, 1.0, 1.0, -0.5, 0.2])
    with_numpy = VectorCache().nearest([SCOPE], probe, 7, lambda scope: stored, {"detail", "state"})
    monkeypatch.setattr(vectors, "np", None)
    without = VectorCache().nearest([SCOPE], probe, 7, lambda scope: stored, {"detail", "state"})
    assert [rowid for rowid, _ in without] == [rowid for rowid, _ in with_numpy]


def test_vectors_of_another_width_are_skipped() -> None:
    """Test that a stored vector of another dimension is never compared."""
    stored = [*rows(5, dim=8), (99, "detail", pack([1.0] * 4), 0.0, None)]
    got = VectorCache().nearest([SCOPE], pack([1.0] * 8), 10, lambda scope: stored, {"detail"})
    assert 99 not in {rowid for rowid, _ in got}


def test_the_cache_is_bounded_and_reloads_after_invalidate() -> None:
    """Test that the least recently used scope goes past capacity, and invalidate reloads."""
    loads: list[tuple[str, str, str]] = []

    def load(scope: tuple[str, str, str]) -> list[VectorRow]:
        """Count loads."""
        loads.append(scope)
        return rows(10)

    cache = VectorCache(capacity=15)
    other = ("nova", "production", "user:anna")
    probe = pack([1.0] * 8)
    cache.nearest([SCOPE], probe, 3, load, {"detail"})
    cache.nearest([SCOPE], probe, 3, load, {"detail"})
    assert loads == [SCOPE]
    cache.nearest([other], probe, 3, load, {"detail"})
    cache.nearest([SCOPE], probe, 3, load, {"detail"})
    assert loads == [SCOPE, other, SCOPE], "the first scope was evicted past 15 rows"
    cache.invalidate(SCOPE)
    cache.nearest([SCOPE], probe, 3, load, {"detail"})
    assert loads[-1] == SCOPE
    assert len(loads) == 4


def test_fuse_adds_reciprocal_ranks() -> None:
    """Test RRF: a record high in both rankings beats one first in only one."""
    fused = fuse([[1, 2, 3], [2, 4, 1]], k=60)
    assert [rowid for rowid, _ in fused][:2] == [2, 1]
    assert dict(fused)[4] == pytest.approx(1 / 62)
    assert fuse([]) == []
    weighted = fuse([[1, 2], [2, 1]], k=60, weights=[3.0, 1.0])
    assert [rowid for rowid, _ in weighted] == [1, 2]
    assert dict(weighted)[1] == pytest.approx(3 / 61 + 1 / 62)


def test_a_span_keeps_to_the_records_said_within_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test that with a span only records said within it come back, with and without numpy."""
    stored = rows(100)
    probe = pack([1.0] * 8)
    span = (3600.0 * 10, 3600.0 * 20)
    with_numpy = VectorCache().nearest([SCOPE], probe, 50, lambda s: stored, {"detail"}, span=span)
    monkeypatch.setattr(vectors, "np", None)
    without = VectorCache().nearest([SCOPE], probe, 50, lambda s: stored, {"detail"}, span=span)
    for got in (with_numpy, without):
        assert got
        assert {rowid for rowid, _ in got} <= set(range(10, 20))


def test_an_appended_vector_joins_without_a_reload() -> None:
    """Test that a vector added to a cached scope is searched at once, with no new load."""
    loads: list[tuple[str, str, str]] = []

    def load(scope: tuple[str, str, str]) -> list[VectorRow]:
        """Count loads."""
        loads.append(scope)
        return rows(20)

    cache = VectorCache()
    probe = pack([1.0] * 8)
    cache.nearest([SCOPE], probe, 3, load, {"detail", "state"})
    cache.append(SCOPE, (500, "detail", probe, 0.0, None))
    cache.append(SCOPE, (501, "detail", pack([1.0] * 4), 0.0, None))
    cache.append(("nova", "production", "user:x"), (502, "detail", probe, 0.0, None))
    best = cache.nearest([SCOPE], probe, 3, load, {"detail", "state"})
    assert best[0][0] == 500
    assert best[0][1] == pytest.approx(1.0)
    assert 501 not in {rowid for rowid, _ in best}
    assert loads == [SCOPE]


def test_among_keeps_to_the_rowids_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the rowids ``among`` come back (fewer than the limit), with and without numpy."""
    stored = rows(100)
    probe = pack([1.0] * 8)
    among = frozenset({4, 40, 77})  # details (every third row is a state)
    with_numpy = VectorCache().nearest(
        [SCOPE], probe, 10, lambda s: stored, {"detail"}, among=among
    )
    monkeypatch.setattr(vectors, "np", None)
    without = VectorCache().nearest([SCOPE], probe, 10, lambda s: stored, {"detail"}, among=among)
    for got in (with_numpy, without):
        assert {rowid for rowid, _ in got} == set(among)


def _said_after(question: list[float], answer: list[float]) -> list[VectorRow]:
    """Return a question (row 1), its answer (row 2, said after it), and a stray row 3."""
    return [
        (1, "detail", pack(question), 0.0, None),
        (2, "detail", pack(answer), 60.0, 1),
        (3, "detail", pack([0.0, 0.0, 1.0, 0.0]), 120.0, None),
    ]


@pytest.mark.parametrize("numpy", [True, False])
def test_before_ranks_a_record_by_the_detail_said_before_it(
    monkeypatch: pytest.MonkeyPatch, numpy: bool
) -> None:
    """The answer takes its question's cosine; a row with nothing before it is left out."""
    if not numpy:
        monkeypatch.setattr(vectors, "np", None)
    stored = _said_after([1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0])
    probe = pack([1.0, 0.0, 0.0, 0.0])
    own = VectorCache().nearest([SCOPE], probe, 3, lambda s: stored, {"detail"})
    before = VectorCache().nearest([SCOPE], probe, 3, lambda s: stored, {"detail"}, before=True)
    assert own[0][0] == 1
    assert own[0][1] == pytest.approx(1.0)
    assert [rowid for rowid, _ in before] == [2]
    assert before[0][1] == pytest.approx(1.0)


def test_a_row_appended_later_finds_the_row_said_before_it() -> None:
    """An appended answer points at its question in the loaded matrix; kinds still apply."""
    stored = _said_after([1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0])
    cache = VectorCache()
    probe = pack([0.0, 0.0, 1.0, 0.0])
    cache.nearest([SCOPE], probe, 3, lambda s: stored, {"detail"})
    cache.append(SCOPE, (7, "detail", pack([1.0, 1.0, 0.0, 0.0]), 180.0, 3))
    cache.append(SCOPE, (8, "state", pack([1.0, 1.0, 0.0, 0.0]), 240.0, 7))
    cache.append(SCOPE, (9, "detail", pack([1.0, 1.0, 0.0, 0.0]), 240.0, 5))  # 5: not here
    best = cache.nearest([SCOPE], probe, 5, lambda s: [], {"detail"}, before=True)
    assert [rowid for rowid, _ in best] == [7, 2]
    assert best[0][1] == pytest.approx(1.0)
    states = cache.nearest([SCOPE], probe, 5, lambda s: [], {"state"}, before=True)
    assert [rowid for rowid, _ in states] == [8]
