"""What was said just before a detail in its conversation (blocking; the worker thread only).

A detail of a conversation (a ``source``) is searched with the detail said just before it:
by its words always (``memory_terms.context``: an answer is found by its question, a
remark by what it remarks on), by its meaning when that one asks something (the vector
ranking ``SearchSettings.context_vectors``; a fact said after an unrelated fact is not
found by it). A detail that goes (forgotten, pruned) takes its words out of the context of
the detail said after it, which gets the words of the one said before instead
(``renew_contexts``): what was forgotten is found by nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..keywords import asks
from .prepared import PreparedMemory

_BEFORE = (
    "SELECT rowid, text FROM memories WHERE agent_id = ? AND environment = ? AND owner = ? "
    "AND source = ? AND kind = 'detail' AND rowid < ? ORDER BY rowid DESC LIMIT 1"
)
_AFTER = (
    "SELECT rowid FROM memories WHERE agent_id = ? AND environment = ? AND owner = ? "
    "AND source = ? AND kind = 'detail' AND rowid > ? ORDER BY rowid LIMIT 1"
)


def said_before(
    db: sqlite3.Connection, memory: PreparedMemory, rowid: int
) -> tuple[int, str] | None:
    """Return the rowid and text of the detail said just before ``memory`` (row ``rowid``).

    Only a detail of a conversation (a ``source``) has one: the newest earlier detail of
    the same scope and conversation (None when there is none).
    """
    if memory.kind != "detail" or not memory.source:
        return None
    scope = memory.scope
    key = (scope.agent_id, scope.environment, scope.owner, memory.source)
    row = db.execute(_BEFORE, (*key, rowid)).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def asked_before(db: sqlite3.Connection, memory: PreparedMemory, rowid: int) -> int | None:
    """Return the rowid of the detail said just before ``memory`` when it asks something.

    An answer is found by the meaning of its question (``SearchSettings.context_vectors``);
    a fact said after an unrelated fact is not (``keywords.asks`` decides what asks).
    """
    before = said_before(db, memory, rowid)
    return before[0] if before is not None and asks(before[1]) else None


type DetailRow = tuple[int, str, str, str, str, str]
"""A record's rowid, persona, environment, owner, kind and conversation (``source``)."""


def said_after(db: sqlite3.Connection, going: Sequence[DetailRow]) -> list[int]:
    """Return the details said just after the ``going`` ones that are not going themselves.

    Their context holds the words of one that goes: ``renew_contexts`` once it has gone.
    """
    gone = {row[0] for row in going}
    after: dict[int, None] = {}
    for rowid, agent, environment, owner, kind, source in going:
        if kind != "detail" or not source:
            continue
        row = db.execute(_AFTER, (agent, environment, owner, source, rowid)).fetchone()
        if row is not None and int(row[0]) not in gone:
            after[int(row[0])] = None
    return list(after)


def renew_contexts(db: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """Give each detail the words of the detail now said just before it (none: empty)."""
    for rowid in rowids:
        row = db.execute(
            "SELECT agent_id, environment, owner, source FROM memories WHERE rowid = ?",
            (rowid,),
        ).fetchone()
        if row is None:
            continue
        before = db.execute(_BEFORE, (*row, rowid)).fetchone()
        terms = (
            db.execute("SELECT terms FROM memory_terms WHERE rowid = ?", (before[0],)).fetchone()
            if before is not None
            else None
        )
        db.execute(
            "UPDATE memory_terms SET context = ? WHERE rowid = ?",
            ("" if terms is None else str(terms[0]), rowid),
        )
