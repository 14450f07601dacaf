"""What was said just before a detail in its conversation (blocking; the worker thread only).

A detail of a conversation (a ``source``) is searched with the detail said just before it:
by its words always (``memory_terms.context``: an answer is found by its question, a
remark by what it remarks on), by its meaning when that one asks something (the vector
ranking ``SearchSettings.context_vectors``; a fact said after an unrelated fact is not
found by it).
"""

from __future__ import annotations

import sqlite3

from ..keywords import asks
from .prepared import PreparedMemory


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
    row = db.execute(
        "SELECT rowid, text FROM memories WHERE agent_id = ? AND environment = ? "
        "AND owner = ? AND source = ? AND kind = 'detail' AND rowid < ? "
        "ORDER BY rowid DESC LIMIT 1",
        (scope.agent_id, scope.environment, scope.owner, memory.source, rowid),
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def asked_before(db: sqlite3.Connection, memory: PreparedMemory, rowid: int) -> int | None:
    """Return the rowid of the detail said just before ``memory`` when it asks something.

    An answer is found by the meaning of its question (``SearchSettings.context_vectors``);
    a fact said after an unrelated fact is not (``keywords.asks`` decides what asks).
    """
    before = said_before(db, memory, rowid)
    return before[0] if before is not None and asks(before[1]) else None
