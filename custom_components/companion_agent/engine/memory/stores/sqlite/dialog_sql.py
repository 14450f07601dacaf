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

from ...retrieval.keywords import asks
from .prepared import PreparedMemory

_BEFORE = (
    "SELECT m.rowid, m.text, t.terms FROM memories m JOIN memory_terms t ON t.rowid = m.rowid "
    "WHERE m.agent_id = ? AND m.environment = ? AND m.owner = ? AND m.source = ? "
    "AND m.kind = 'detail' AND m.rowid < ? ORDER BY m.rowid DESC LIMIT 1"
)
_AFTER = (
    "SELECT rowid FROM memories WHERE agent_id = ? AND environment = ? AND owner = ? "
    "AND source = ? AND kind = 'detail' AND rowid > ? ORDER BY rowid LIMIT 1"
)

type Conversation = tuple[str, str, str, str]
"""A conversation of one scope: persona, environment, owner and ``source``."""
type DetailRow = tuple[int, str, str, str, str, str]
"""A record's rowid, persona, environment, owner, kind and conversation (``source``)."""


def conversation_of(memory: PreparedMemory) -> Conversation | None:
    """Return the conversation a memory is a detail of (None: not a detail, or of none)."""
    if memory.kind != "detail" or not memory.source:
        return None
    scope = memory.scope
    return scope.agent_id, scope.environment, scope.owner, memory.source


def said_before(
    db: sqlite3.Connection, conversation: Conversation | None, rowid: int
) -> tuple[str, int | None]:
    """Return what was said just before row ``rowid`` in ``conversation``.

    That is the words (terms) of the newest earlier detail of the conversation ("" when
    there is none), and its rowid when it asks something (``keywords.asks``; else None).
    """
    if conversation is None:
        return "", None
    row = db.execute(_BEFORE, (*conversation, rowid)).fetchone()
    if row is None:
        return "", None
    return str(row[2]), int(row[0]) if asks(str(row[1])) else None


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
        if row is not None:
            terms, _ = said_before(db, tuple(row), rowid)
            db.execute("UPDATE memory_terms SET context = ? WHERE rowid = ?", (terms, rowid))
