"""Hubness: how near a record's vector lies to the rest of its scope, taken off its cosine.

Among sentence vectors some records lie near many others and rank high for questions they
do not answer (hubs; Radovanović et al., 2010): small talk, greetings that name someone
("Hi Mia, what are you up to?" for "What is Mia allergic to?"), in a chat the bare "?"
turns. CSLS (Conneau et al., 2018) scores a pair by its cosine less each side's mean
cosine to its nearest neighbours; a search ranks records for one question, so only the
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

from dataclasses import dataclass
from typing import Any

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


def measure(np: Any, rows: Any) -> Hubs:
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


def extend(np: Any, hubs: Hubs, rows: Any) -> Hubs:
    """Return ``hubs`` for ``rows``: the rows it measured, then new ones (normalised)."""
    count = len(rows)
    if count > hubs.measured * REMEASURE or (
        count > hubs.measured and len(hubs.reference) == hubs.measured
    ):
        return measure(np, rows)
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
