"""Vectors: float32 BLOBs in SQLite, cosine similarity over a bounded in-memory cache.

Each record's vector is stored as little-endian float32 bytes next to the name of the
model that made it: vectors of another model (or dimension) are never compared. Searching
reads no BLOB: the store's worker thread keeps one matrix per scope (rows L2-normalised),
loaded the first time the scope is searched; a new record's vector joins it, a record
that retires or goes drops the scope's matrix (read again at the next search); the cache
holds at most ``MAX_CACHED_VECTORS`` rows and evicts the least recently used scope. Each row
knows the row of the question said just before it in its conversation, so a search can
also rank a record by that question (``before``: an answer is found by its question), and
its cosine can be lessened by the record's hubness (``hubs``: how near it lies to everything).
numpy does the arithmetic when it is installed (Home Assistant's images ship it); without
it a pure-Python loop gives the same ranking by cosine, slower (about 0.1 s at 10 k
vectors), and leaves hubness out.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import hubs as hub_measure

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy ships with Home Assistant
    np = None  # type: ignore[assignment]

MAX_CACHED_VECTORS = 50_000
"""About 75 MB of 384-dim vectors: a bound a Raspberry Pi can hold beside Home Assistant."""

type ScopeKey = tuple[str, str, str]
type VectorRow = tuple[int, str, bytes, float, int | None]
"""A record's rowid, kind, vector, when it was said (seconds since the epoch), and the
rowid of the question said just before it in its conversation (None: no question)."""
type VectorRows = Callable[[ScopeKey], Iterable[VectorRow]]
type Span = tuple[float, float]
"""From, to (excluded): seconds since the epoch."""


def pack(vector: Sequence[float]) -> bytes:
    """Return ``vector`` as little-endian float32 bytes, L2-normalised (zero stays zero)."""
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    values = array("f", (x / norm for x in vector))
    if values.itemsize != 4:  # pragma: no cover - every platform Python runs on
        raise ValueError("float32 is not 4 bytes here")
    return values.tobytes()


def unpack(blob: bytes) -> array[float]:
    """Return the float32 values of a stored vector."""
    values = array("f")
    values.frombytes(blob)
    return values


@dataclass(slots=True)
class _ScopeMatrix:
    """One scope's vectors: record rowids, kinds, times, and their normalised rows."""

    rowids: list[int]
    kinds: list[str]
    times: list[float]
    before: list[int]
    """The row index of the question said just before each row (-1: none, or not here)."""
    rows: object
    """A numpy float32 matrix (n × dim) or, without numpy, a list of arrays."""
    pending: list[VectorRow] = field(default_factory=list)
    """Rows added since, joined to ``rows`` at the next search."""
    arrays: Any = None
    """numpy arrays of ``kinds``, ``times`` and ``before``, made at the first search."""
    hubs: hub_measure.Hubs | None = None
    """Each row's hubness, measured at the first search that weighs it (numpy only)."""


class VectorCache:
    """The vectors of recently searched scopes, for cosine top-k (worker thread only)."""

    def __init__(self, capacity: int = MAX_CACHED_VECTORS) -> None:
        """Hold at most ``capacity`` rows."""
        self._capacity = capacity
        self._scopes: OrderedDict[ScopeKey, _ScopeMatrix] = OrderedDict()
        self._size = 0

    @property
    def size(self) -> int:
        """Return how many rows the cache holds, pending ones included."""
        return self._size

    def invalidate(self, scope: ScopeKey | None = None) -> None:
        """Drop one scope's matrix, or every matrix."""
        if scope is None:
            self._scopes.clear()
            self._size = 0
            return
        dropped = self._scopes.pop(scope, None)
        if dropped is not None:
            self._size -= len(dropped.rowids) + len(dropped.pending)

    def append(self, scope: ScopeKey, row: VectorRow) -> None:
        """Add a new record's vector to its scope, if that scope is cached (else nothing)."""
        cached = self._scopes.get(scope)
        if cached is not None:
            cached.pending.append(row)
            self._size += 1

    def nearest(
        self,
        scopes: Sequence[ScopeKey],
        query: bytes,
        limit: int,
        load: VectorRows,
        kinds: Collection[str],
        *,
        span: Span | None = None,
        among: Collection[int] | None = None,
        before: bool = False,
        hubness: float = 0.0,
    ) -> list[tuple[int, float]]:
        """Return up to ``limit`` ``(rowid, score)`` pairs of ``kinds`` over ``scopes``.

        Best first; a score is a cosine less ``hubness`` × the record's hubness (numpy
        only); only records said within ``span`` when it is given, and only the rowids
        ``among`` when that is given; ``before`` scores each record by the score of the
        question said just before it (records with no question before them are left out).
        ``load`` reads a scope's rows when its matrix is not cached.
        """
        probe = unpack(query)
        found: list[tuple[int, float]] = []
        for scope in scopes:
            matrix = self._matrix(scope, len(probe), load)
            found.extend(
                _top(matrix, probe, limit, kinds, span, among=among, before=before, hubness=hubness)
            )
        found.sort(key=lambda pair: pair[1], reverse=True)
        return found[:limit]

    def _matrix(self, scope: ScopeKey, dim: int, load: VectorRows) -> _ScopeMatrix:
        """Return the scope's matrix of ``dim``-wide vectors, loading it when not cached."""
        cached = self._scopes.get(scope)
        if cached is not None and _width(cached) in (dim, 0):
            self._scopes.move_to_end(scope)
            if cached.pending:
                self._join_pending(scope, cached, dim)
            return self._scopes[scope]
        self.invalidate(scope)
        matrix = _build(load(scope), dim)
        self._scopes[scope] = matrix
        self._size += len(matrix.rowids)
        while self._size > self._capacity and len(self._scopes) > 1:
            _, old = self._scopes.popitem(last=False)
            self._size -= len(old.rowids) + len(old.pending)
        return matrix

    def _join_pending(self, scope: ScopeKey, cached: _ScopeMatrix, dim: int) -> None:
        """Join the rows added since the matrix was built (one copy per search, not per add)."""
        self._size -= len(cached.rowids) + len(cached.pending)
        added = _build(cached.pending, dim, known=cached.rowids)
        if not cached.rowids:
            joined = added
        else:
            measured = cached.hubs
            if np is not None and isinstance(cached.rows, np.ndarray):
                rows: object = np.concatenate([cached.rows, added.rows])
                if measured is not None:
                    measured = hub_measure.extend(np, measured, rows)
            else:
                assert isinstance(cached.rows, list)
                assert isinstance(added.rows, list)
                rows = cached.rows + added.rows
            joined = _ScopeMatrix(
                rowids=cached.rowids + added.rowids,
                kinds=cached.kinds + added.kinds,
                times=cached.times + added.times,
                before=cached.before + added.before,
                rows=rows,
                hubs=measured,
            )
        self._scopes[scope] = joined
        self._size += len(joined.rowids)


def _build(stored: Iterable[VectorRow], dim: int, known: Sequence[int] = ()) -> _ScopeMatrix:
    """Return a matrix of the ``dim``-wide vectors among ``stored`` (others are skipped).

    Rows come oldest first; ``known`` are the rowids of the rows this matrix will follow
    (a detail's ``before`` index counts them).
    """
    rowids: list[int] = []
    kinds: list[str] = []
    times: list[float] = []
    said_before: list[int | None] = []
    vectors: list[bytes] = []
    for rowid, kind, blob, moment, previous in stored:
        if len(blob) == dim * 4:
            rowids.append(rowid)
            kinds.append(kind)
            times.append(moment)
            said_before.append(previous)
            vectors.append(blob)
    index = {rowid: n for n, rowid in enumerate([*known, *rowids])}
    before = [-1 if p is None else index.get(p, -1) for p in said_before]
    rows: object = [unpack(blob) for blob in vectors]
    if np is not None:
        rows = np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), dim)
    return _ScopeMatrix(rowids=rowids, kinds=kinds, times=times, before=before, rows=rows)


def _width(matrix: _ScopeMatrix) -> int:
    """Return the vector width of a cached matrix (0 when it is empty)."""
    if not matrix.rowids:
        return 0
    if np is not None and isinstance(matrix.rows, np.ndarray):
        return int(matrix.rows.shape[1])
    assert isinstance(matrix.rows, list)
    return len(matrix.rows[0])


def _top(
    matrix: _ScopeMatrix,
    probe: array[float],
    limit: int,
    kinds: Collection[str],
    span: Span | None,
    *,
    among: Collection[int] | None = None,
    before: bool = False,
    hubness: float = 0.0,
) -> list[tuple[int, float]]:
    """Return the ``limit`` best ``(rowid, score)`` of ``kinds`` (rows and probe normalised).

    A score is the cosine less ``hubness`` × the row's hubness (numpy only); ``before``: a
    row's score is that of the question said just before it.
    """
    if not matrix.rowids:
        return []
    if np is not None and isinstance(matrix.rows, np.ndarray):
        mask = _mask(matrix, kinds, span, among)
        # einsum, not the BLAS matmul: BLAS spreads this small product over every core,
        # and on a busy machine that waits for them (p95 ×40 measured); einsum stays on
        # this thread at well under a millisecond for 10 k rows.
        scores = np.einsum("ij,j->i", matrix.rows, np.frombuffer(probe.tobytes(), np.float32))
        if hubness > 0:
            if matrix.hubs is None:
                matrix.hubs = hub_measure.measure(np, matrix.rows)
            scores -= np.float32(hubness) * matrix.hubs.values
        if before:
            previous = matrix.arrays[2]
            scores = np.where(previous >= 0, scores[previous], np.float32(-np.inf))
        scores[~mask] = -np.inf
        best = (
            np.argpartition(-scores, limit)[:limit] if len(scores) > limit else range(len(scores))
        )
        return [(matrix.rowids[i], float(scores[i])) for i in best if scores[i] != -np.inf]
    assert isinstance(matrix.rows, list)
    wanted = [kind in kinds for kind in matrix.kinds]
    if span is not None:
        wanted = [w and span[0] <= t < span[1] for w, t in zip(wanted, matrix.times, strict=True)]
    if among is not None:
        wanted = [w and rowid in among for w, rowid in zip(wanted, matrix.rowids, strict=True)]
    rows = matrix.rows
    picks = [(n, matrix.before[n] if before else n) for n, keep in enumerate(wanted) if keep]
    scored = (
        (matrix.rowids[n], math.fsum(a * b for a, b in zip(rows[row], probe, strict=True)))
        for n, row in picks
        if row >= 0
    )
    return heapq.nlargest(limit, scored, key=lambda pair: pair[1])


def _mask(
    matrix: _ScopeMatrix, kinds: Collection[str], span: Span | None, among: Collection[int] | None
) -> Any:
    """Return the numpy mask of the rows of ``kinds`` said within ``span``, of ``among``."""
    if matrix.arrays is None:
        matrix.arrays = (
            np.asarray(matrix.kinds),
            np.asarray(matrix.times, dtype=np.float64),
            np.asarray(matrix.before, dtype=np.int64),
        )
    kind_array, time_array, _ = matrix.arrays
    mask = np.isin(kind_array, list(kinds))
    if span is not None:
        mask &= (time_array >= span[0]) & (time_array < span[1])
    if among is not None:
        mask &= np.isin(np.asarray(matrix.rowids), np.fromiter(among, np.int64, len(among)))
    return mask
