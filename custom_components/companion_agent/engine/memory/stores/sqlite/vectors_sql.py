"""The records' vectors in SQL (blocking; run on the store's worker thread only).

A record's vector is a float32 BLOB in its ``memories`` row with the model that made it
(``vector_model``); a record whose text the embedding server refused is marked
``refused:<model>`` so the backfill does not ask again. A vector is stored only on the row
it was made for (its rowid and its id), so one embedded while the record was forgotten or
replaced never lands on another.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from ...retrieval.keywords import asks
from .vectors import VectorCache, VectorRow

EPOCH_SECONDS = "(julianday(valid_from) - 2440587.5) * 86400.0"
REFUSED = "refused:"
"""Prefix of ``vector_model`` on a record whose text the embedding server refused."""


def vector_rows(
    db: sqlite3.Connection, scope: tuple[str, str, str], model: str, *, history: bool = False
) -> Iterator[VectorRow]:
    """Yield ``(rowid, kind, vector, said at, asked before)`` of a scope's ``model`` records.

    Oldest first; ``said at`` is seconds since the epoch, ``asked before`` the rowid of the
    detail said just before a detail in its conversation (its ``source``) when that one
    asks something (None otherwise; see ``dialog_sql.said_before``). ``history`` yields
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
