"""The records' vectors: float32 BLOBs in SQLite, cosine similarity over a bounded cache, hubness.

**Stored.** Each record's vector is stored as little-endian float32 bytes in its
``memories`` row next to the name of the model that made it (``vector_model``): vectors of
another model (or dimension) are never compared. A record whose text the embedding server
refused is marked ``refused:<model>`` so the backfill does not ask again. A vector is
stored only on the row it was made for (its rowid and its id), so one embedded while the
record was forgotten or replaced never lands on another. The SQL blocks: run it on the
store's worker thread only.

**Searched.** Searching reads no BLOB: the store's worker thread keeps one matrix per scope
(rows L2-normalised), loaded the first time the scope is searched; a new record's vector
joins it, a record that retires or goes drops the scope's matrix (read again at the next
search); the cache holds at most ``MAX_CACHED_VECTORS`` rows and evicts the least recently
used scope. Each row knows the row of the question said just before it in its
conversation, so a search can also rank a record by that question (``before``: an answer
is found by its question), and its cosine can be lessened by the record's hubness. numpy
does the arithmetic when it is installed (Home Assistant's images ship it); without it a
pure-Python loop gives the same ranking by cosine, slower (about 0.1 s at 10 k vectors),
and leaves hubness out.

**Hubness**: how near a record's vector lies to the rest of its scope, taken off its
cosine. Among sentence vectors some records lie near many others and rank high for
questions they do not answer (hubs; Radovanović et al., 2010): small talk, greetings that
name someone ("Hi Mia, what are you up to?" for "What is Mia allergic to?"), in a chat the
bare "?" turns. CSLS (Conneau et al., 2018) scores a pair by its cosine less each side's
mean cosine to its nearest neighbours; a search ranks records for one question, so only the
record's side changes the order: a vector ranking scores ``cosine − weight × hubness``, a
record's hubness being the mean cosine of its nearest records in its scope. What is
distinct rises over what is repeated; a record far from every other (an emoji among
sentences) is not lessened at all.

Measured against every record that costs n² (2 s at 10 k records), so it is measured
against an evenly spaced sample of at most ``REFERENCE`` records of the scope, with the
number of neighbours scaled to the sample (``NEIGHBOURS`` of the whole scope, at least
one): exact up to ``REFERENCE`` records, ~50 ms at 10 k. A scope's hubness is computed at
its first search that asks for it; records added since are measured against the same
sample until the scope has grown by a quarter (or past a sample that held every record),
then the whole scope is measured again. A scope of fewer than ``MIN_RECORDS`` has none:
there a record's nearest records are most of the scope, and their mean says what the
scope is made of (its languages, its subjects), not how far a record reaches. numpy only:
without it vectors rank by cosine alone.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...retrieval.keywords import asks

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
    hubs: Hubs | None = None
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
                    measured = extend_hubs(np, measured, rows)
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
                matrix.hubs = measure_hubs(np, matrix.rows)
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


# Hubness: how near a record's vector lies to the rest of its scope.
NEIGHBOURS = 20
"""How many of a record's nearest records of its scope its hubness is the mean cosine of."""
REFERENCE = 256
"""At most this many records of a scope, evenly spaced, are what hubness is measured by."""
MIN_RECORDS = 10 * NEIGHBOURS
"""A scope of fewer records has no hubness (a record's neighbours would be most of it)."""
REMEASURE = 1.25
"""A scope grown by this factor since its sample was drawn is measured again."""


@dataclass(frozen=True, slots=True)
class Hubs:
    """A scope's sample of reference rows and each of its rows' hubness."""

    reference: Any
    """The reference rows (a numpy float32 matrix, r × dim)."""
    neighbours: int
    """How many nearest reference rows a row's hubness is the mean of."""
    values: Any
    """Each row's hubness (numpy float32, one per row of the scope's matrix)."""
    measured: int
    """How many rows the scope had when the sample was drawn."""


def measure_hubs(np: Any, rows: Any) -> Hubs:
    """Return the hubness of every row of ``rows`` (normalised, n × dim) within them."""
    count = len(rows)
    picks = np.unique(np.linspace(0, count - 1, min(count, REFERENCE)).round().astype(np.int64))
    reference = rows[picks]
    neighbours = max(1, min(len(picks) - 1, round(NEIGHBOURS * len(picks) / count)))
    values = np.zeros(count, np.float32)
    if count >= MIN_RECORDS:
        similar = rows @ reference.T  # once a matrix, not each search: BLAS is fine here
        similar[picks, np.arange(len(picks))] = -np.inf  # a row is not its own neighbour
        values = _mean_of_top(np, similar, neighbours)
    return Hubs(reference=reference, neighbours=neighbours, values=values, measured=count)


def extend_hubs(np: Any, hubs: Hubs, rows: Any) -> Hubs:
    """Return ``hubs`` for ``rows``: the rows it measured, then new ones (normalised)."""
    count = len(rows)
    if count > hubs.measured * REMEASURE or (
        count > hubs.measured and len(hubs.reference) == hubs.measured
    ):
        return measure_hubs(np, rows)
    added = _mean_of_top(np, rows[len(hubs.values) :] @ hubs.reference.T, hubs.neighbours)
    values = np.concatenate([hubs.values, added])
    return Hubs(hubs.reference, hubs.neighbours, values, hubs.measured)


def _mean_of_top(np: Any, similar: Any, neighbours: int) -> Any:
    """Return the mean of each row's ``neighbours`` largest values."""
    if neighbours == 1:
        return similar.max(axis=1).astype(np.float32)
    width = similar.shape[1]
    top = np.partition(similar, width - neighbours, axis=1)[:, width - neighbours :]
    return top.mean(axis=1).astype(np.float32)


# The records' vectors in SQL.
EPOCH_SECONDS = "(julianday(valid_from) - 2440587.5) * 86400.0"
REFUSED = "refused:"
"""Prefix of ``vector_model`` on a record whose text the embedding server refused."""


def vector_rows(
    db: sqlite3.Connection, scope: tuple[str, str, str], model: str, *, history: bool = False
) -> Iterator[VectorRow]:
    """Yield ``(rowid, kind, vector, said at, asked before)`` of a scope's ``model`` records.

    Oldest first; ``said at`` is seconds since the epoch, ``asked before`` the rowid of the
    detail said just before a detail in its conversation (its ``source``) when that one
    asks something (None otherwise; see ``records_sql.said_before``). ``history`` yields
    retired records too.
    """
    agent, environment, owner = scope
    current = "" if history else "AND valid_until IS NULL"
    rows = db.execute(
        f"SELECT rowid, kind, vector, {EPOCH_SECONDS}, before, before_text FROM (SELECT "
        "rowid, kind, vector, vector_model, valid_from, valid_until, CASE WHEN kind = "
        "'detail' AND source != '' THEN LAG(rowid) OVER said END AS before, LAG(text) OVER "
        "said AS before_text FROM memories WHERE agent_id = ? AND environment = ? AND "
        "owner = ? WINDOW said AS (PARTITION BY kind, source ORDER BY rowid)) "
        f"WHERE vector_model = ? AND vector IS NOT NULL {current} ORDER BY rowid",
        (agent, environment, owner, model),
    )
    for rowid, kind, vector, moment, before, before_text in rows:
        asked = before is not None and asks(str(before_text))
        yield (rowid, kind, vector, moment, before if asked else None)


def unembedded(
    db: sqlite3.Connection, model: str, limit: int
) -> list[tuple[int, str, str, tuple[str, str, str]]]:
    """Return ``(rowid, id, text, scope key)`` of current records without a ``model`` vector.

    Newest first; records whose text the server refused for ``model`` are left out.
    """
    rows = db.execute(
        "SELECT rowid, id, text, agent_id, environment, owner FROM memories "
        "WHERE valid_until IS NULL AND (vector_model IS NULL OR "
        "(vector_model != ? AND vector_model != ?)) ORDER BY rowid DESC LIMIT ?",
        (model, REFUSED + model, limit),
    )
    return [(int(r[0]), str(r[1]), str(r[2]), (str(r[3]), str(r[4]), str(r[5]))) for r in rows]


def store_vectors(
    db: sqlite3.Connection,
    rows: Sequence[tuple[int, str, str, tuple[str, str, str]]],
    vectors: Sequence[bytes | None],
    model: str,
    cache: VectorCache,
) -> int:
    """Store the vectors of the ``unembedded`` rows still there; return how many.

    A vector of None marks a text the server refused (``mark_refused``). A record forgotten
    (or replaced) while its text was being embedded is matched by its id too, never by a
    rowid a new record may have taken since. The scopes' cached matrices go.
    """
    stored = 0
    for (rowid, record_id, _, scope), vector in zip(rows, vectors, strict=True):
        if vector is None:
            mark_refused(db, rowid, model, record_id)
            continue
        stored += db.execute(
            "UPDATE memories SET vector = ?, vector_model = ? "
            "WHERE rowid = ? AND id = ? AND valid_until IS NULL",
            (vector, model, rowid, record_id),
        ).rowcount
        cache.invalidate(scope)
    return stored


def mark_refused(db: sqlite3.Connection, rowid: int, model: str, record_id: str) -> None:
    """Mark a record whose text the embedding server refused, so it is not asked again."""
    db.execute(
        "UPDATE memories SET vector = NULL, vector_model = ? WHERE rowid = ? AND id = ?",
        (REFUSED + model, rowid, record_id),
    )
