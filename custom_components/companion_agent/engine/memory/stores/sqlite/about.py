"""Who a question is about: the names it shares with the memories it can read (blocking).

A memory keeps the names it is about (the speaker, the people and things it names) in the
``names`` column of ``memory_terms``. When a question names one of them ("What drinks does
Nicolas like?"), the search adds rankings restricted to the memories about that name, in
which the name itself no longer tells anything: the keywords ranked by the question's other
words, the vectors by the question embedded without the name. A small embedding model ranks
a sentence largely by the names in it (a greeting "Hey Nicolas!" outranks "I love Inca
Kola"), so only inside the restricted set does the rest of the question decide.

The unrestricted rankings stay as they are: "kitchen" in a question may name a room the
memories are about, and those memories must still be found when they say it otherwise.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from ...models import MemoryScope
from ...retrieval.keywords import WORD, fold
from .records_sql import scope_clause

MAX_NAMES = 4
"""At most this many names of one question restrict: the first it names."""


def names_in(
    db: sqlite3.Connection, terms: Sequence[str], scopes: Sequence[MemoryScope]
) -> list[str]:
    """Return the ``terms`` that are a name of a current memory of ``scopes``."""
    where, params = scope_clause(scopes, "m")
    found: list[str] = []
    for term in terms:
        # CROSS JOIN keeps the FTS5 match the outer loop: each match is looked up by rowid
        # and the first readable one ends it. Joined freely, SQLite may walk the scope's
        # rows and match each (hundreds of ms at 10 k memories); as an IN subquery, it
        # collects every match first (5 ms for a name 10 k memories share).
        row = db.execute(
            "SELECT 1 FROM memory_terms CROSS JOIN memories m ON m.rowid = memory_terms.rowid "
            f"WHERE memory_terms MATCH ? AND {where} AND m.valid_until IS NULL LIMIT 1",
            (f'{{names}} : "{term}"', *params),
        ).fetchone()
        if row is not None:
            found.append(term)
            if len(found) == MAX_NAMES:
                break
    return found


def names_expression(names: Sequence[str]) -> str:
    """Return the FTS5 expression matching a memory about any of ``names``."""
    return "{names} : (" + " OR ".join(f'"{name}"' for name in names) + ")"


def about(db: sqlite3.Connection, names: Sequence[str]) -> frozenset[int]:
    """Return the rowids of the memories about any of ``names`` (any scope: filter later)."""
    rows = db.execute(
        "SELECT rowid FROM memory_terms WHERE memory_terms MATCH ?", (names_expression(names),)
    )
    return frozenset(int(row[0]) for row in rows)


def without(text: str, names: Sequence[str]) -> str:
    """Return ``text`` without the words that are ``names`` (and a possessive ``'s``).

    Latin names are whole words; a CJK name (a bigram or a character) is cut where it
    stands. The text is returned as it is when nothing else would be left.
    """
    wanted = set(names)
    pieces: list[str] = []
    last = 0
    dropped = False
    for match in WORD.finditer(text):
        folded = fold(match.group())
        gap = text[last : match.start()]
        possessive = dropped and folded == "s" and gap in ("'", "’")
        if possessive:
            dropped = False
        elif folded in wanted:
            pieces.append(" ")
            dropped = True
        else:
            pieces += [gap, match.group()]
            dropped = False
        last = match.end()
    stripped = "".join([*pieces, text[last:]])
    for name in wanted:
        if not name.isascii():
            stripped = stripped.replace(name, " ")
    stripped = re.sub(r"\s+", " ", stripped).strip()
    return stripped if WORD.search(stripped) else text
