"""Memory retrieval for one turn: conclusions, details and the graph, by relevance, in a budget.

**What reaches a turn.** Every read starts at once, under one budget (300 ms by default):

- conclusions (current states) found like details — keywords, vectors, and the graph
  neighbourhood of what the turn mentions — the person's own searched apart from the
  household's, so no one else's writes can push a person's conclusions out;
- details and summaries, by the same search;
- the graph's relations around the names the turn mentions;
- the person's newest conclusions, which fill what room is left.

A search answers with keywords at once and with vectors when the query's embedding comes
within ``VECTOR_SHARE`` of the budget; a read that has not answered by the end of the
budget is left out, named in ``RetrievedMemory.missed`` and counted, and the turn goes on.

**What is shown.** ``render`` fills ``MAX_RENDERED_CHARS`` (about 500 tokens) in this order
of priority: relevant conclusions (the person's, then the household's) up to
``STATE_SHARE`` of it, then details, then relations, then more conclusions (relevant
ones left over, the graph's, the person's newest). Each memory is one JSON string, so a
stored sentence can never pass for the block's structure or for an instruction (the
prompt builder defuses the block once more).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...chars import is_wide
from .. import models as protocol
from ..models import (
    MemoryHit,
    MemoryKind,
    MemoryQuery,
    MemoryRecord,
    MemoryScope,
    Relation,
    RetrievedMemory,
)
from .keywords import fold

LOGGER = logging.getLogger(__name__)

DEFAULT_BUDGET = 0.3
VECTOR_SHARE = 0.6
"""Part of the budget a search waits for the query's embedding; the rest ranks and reads."""
MAX_STATES = 20
MAX_DETAILS = 6
MAX_RELATIONS = 12
MAX_NAMES = 12
MAX_RENDERED_CHARS = 1900
STATE_SHARE = 0.45
_WORD = re.compile(r"[^\W_]{3,}|[^\W\d_a-zA-Z]{2,}", re.UNICODE)
_DETAILS: frozenset[MemoryKind] = frozenset({"detail", "summary"})
_STATES: frozenset[MemoryKind] = frozenset({"state"})


class RetrievalCounters:
    """How often retrieval ran and which parts missed their budget: figures only."""

    def __init__(self) -> None:
        """Start at zero."""
        self.turns = 0
        self.missed: Counter[str] = Counter()

    def snapshot(self) -> dict[str, int]:
        """Return the counters as plain figures."""
        return {"turns": self.turns, **{f"missed_{k}": v for k, v in self.missed.items()}}


def mentioned_names(text: str, known: Sequence[str] = ()) -> list[str]:
    """Return the names a turn may be about: known entities it contains, then its words."""
    lowered = text.lower()
    found = [name for name in known if name and name.lower() in lowered]
    words = [w for w in _WORD.findall(text) if not is_wide(w[0]) or len(w) <= 8]
    return list(dict.fromkeys([*found, *words]))[:MAX_NAMES]


async def retrieve(
    store: protocol.MemoryStore,
    graph: protocol.GraphStore | None,
    scope: MemoryScope,
    text: str,
    *,
    budget: float = DEFAULT_BUDGET,
    known_names: Sequence[str] = (),
    counters: RetrievalCounters | None = None,
) -> RetrievedMemory:
    """Gather what ``scope`` may read about ``text`` within ``budget`` seconds."""
    own, *others = scope.readable()
    wait = budget * VECTOR_SHARE

    def search(scopes: tuple[MemoryScope, ...], kinds: frozenset[MemoryKind], limit: int) -> Any:
        """Start one search of ``scopes`` for ``kinds``."""
        query = MemoryQuery(text=text, scopes=scopes, limit=limit, kinds=kinds, vector_wait=wait)
        return asyncio.ensure_future(store.search(query))

    parts: dict[str, asyncio.Future[Any]] = {  # the details first: the thread takes them in turn
        "details": search((own, *others), _DETAILS, MAX_DETAILS),
        "states": search((own,), _STATES, MAX_STATES),
        "recent_states": asyncio.ensure_future(store.current_states([own])),
    }
    if others:
        parts["household_states"] = search(tuple(others), _STATES, MAX_STATES)
    names = mentioned_names(text, known_names)
    if graph is not None and names:
        parts["graph"] = asyncio.ensure_future(
            graph.neighbourhood((own, *others), names, limit=MAX_RELATIONS)
        )
    await asyncio.wait(parts.values(), timeout=budget)
    missed = [name for name, part in parts.items() if not _answered(name, part)]
    if counters is not None:
        counters.turns += 1
        counters.missed.update(missed)

    def answer(name: str) -> list[Any]:
        """Return what a part found (nothing when it missed)."""
        return [] if name in missed or name not in parts else list(parts[name].result())

    relations: list[Relation] = answer("graph")[:MAX_RELATIONS]
    relevant = _records([*answer("states"), *answer("household_states")])
    return RetrievedMemory(
        states=tuple(relevant),
        details=tuple(answer("details")[:MAX_DETAILS]),
        relations=tuple(relations),
        more_states=tuple(_more_states(relevant, answer("recent_states"), relations, names)),
        missed=tuple(missed),
    )


def _records(hits: Sequence[MemoryHit]) -> list[MemoryRecord]:
    """Return the records of ``hits`` in order, each once."""
    seen: dict[str, MemoryRecord] = {}
    for hit in hits:
        seen.setdefault(hit.record.id, hit.record)
    return list(seen.values())


def _more_states(
    shown: Sequence[MemoryRecord],
    recent: Sequence[MemoryRecord],
    relations: Sequence[Relation],
    mentioned: Sequence[str],
) -> list[MemoryRecord]:
    """Return the person's newest conclusions not yet found, those the graph names first."""
    ids = {record.id for record in shown}
    related = {fold(n) for r in relations for n in (r.subject, r.object)} - {
        fold(n) for n in mentioned
    }

    def named(record: MemoryRecord) -> bool:
        """Say whether the record names an entity of the turn's neighbourhood."""
        words = fold(f"{record.topic or ''} {record.text}")
        return any(name and name in words for name in related)

    rest = [record for record in recent if record.id not in ids]
    return [*(r for r in rest if named(r)), *(r for r in rest if not named(r))]


def _answered(name: str, part: asyncio.Future[Any]) -> bool:
    """Say whether a read answered in time and without error; cancel it when it did not."""
    if not part.done():
        part.cancel()
        return False
    if part.cancelled():
        return False
    if (err := part.exception()) is not None:
        LOGGER.warning("Memory %s read failed: %s", name, err)
        return False
    return True


def render(found: RetrievedMemory, budget: int = MAX_RENDERED_CHARS) -> str | None:
    """Return the memories as lines of quoted data, conclusions first; None when empty.

    Lines are chosen by priority within ``budget`` characters (see the module docs) and
    shown conclusions first, then details, then relations.
    """
    states = [(record.id, _state_line(record)) for record in found.states]
    details = [_detail_line(hit) for hit in found.details]
    relations = [_relation_line(relation) for relation in found.relations]
    more = [(record.id, _state_line(record)) for record in found.more_states]
    chosen_states: dict[str, str] = {}
    chosen_details: list[str] = []
    chosen_relations: list[str] = []
    used = 0

    def take(line: str, limit: int) -> bool:
        """Count ``line`` in if it fits under ``limit`` characters."""
        nonlocal used
        if used + len(line) + 1 > limit:
            return False
        used += len(line) + 1
        return True

    for record_id, line in states:
        if take(line, int(budget * STATE_SHARE)):
            chosen_states[record_id] = line
    chosen_details = [line for line in details if take(line, budget)]
    chosen_relations = [line for line in relations if take(line, budget)]
    for record_id, line in [*states, *more]:
        if record_id not in chosen_states and take(line, budget):
            chosen_states[record_id] = line
    lines = [*chosen_states.values(), *chosen_details, *chosen_relations]
    return "\n".join(lines) if lines else None


def _state_line(record: MemoryRecord) -> str:
    """Return one conclusion as a line."""
    return f"conclusion on {_quoted(record.topic or '')}: {_quoted(record.text)}"


def _detail_line(hit: MemoryHit) -> str:
    """Return one detail or summary as a line."""
    label = "summary" if hit.record.kind == "summary" else "remembered"
    return f"{label}: {_quoted(hit.record.text)}"


def _relation_line(relation: Relation) -> str:
    """Return one relation as a line."""
    return (
        "relation: "
        f"{_quoted(relation.subject)} {_quoted(relation.predicate)} {_quoted(relation.object)}"
    )


def _quoted(text: str) -> str:
    """Return ``text`` as one JSON string: quotes and line breaks escaped."""
    return json.dumps(text, ensure_ascii=False)
