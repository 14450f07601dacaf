"""Memory retrieval for one turn: conclusions, then details, then the graph, in a budget.

The three reads run at once under one budget (300 ms by default); whatever has not
answered by then is left out, named in ``RetrievedMemory.missed`` and counted, and the
turn goes on. What is found is rendered as quoted data for the ``[memory context]`` block:
each memory one JSON string, so a stored sentence can never pass for the block's structure
or for an instruction (the prompt builder defuses the block once more).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..chars import is_wide
from .types import (
    GraphStore,
    MemoryQuery,
    MemoryScope,
    MemoryStore,
    RetrievedMemory,
)

LOGGER = logging.getLogger(__name__)

DEFAULT_BUDGET = 0.3
MAX_STATES = 10
MAX_DETAILS = 6
MAX_RELATIONS = 12
MAX_NAMES = 12
MAX_RENDERED_CHARS = 1900
_WORD = re.compile(r"[^\W_]{3,}|[^\W\d_a-zA-Z]{2,}", re.UNICODE)


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
    store: MemoryStore,
    graph: GraphStore | None,
    scope: MemoryScope,
    text: str,
    *,
    budget: float = DEFAULT_BUDGET,
    known_names: Sequence[str] = (),
    counters: RetrievalCounters | None = None,
) -> RetrievedMemory:
    """Gather what ``scope`` may read about ``text`` within ``budget`` seconds."""
    scopes = scope.readable()
    query = MemoryQuery(
        text=text, scopes=scopes, limit=MAX_DETAILS, kinds=frozenset({"detail", "summary"})
    )
    states = asyncio.ensure_future(store.current_states(scopes))
    details = asyncio.ensure_future(store.search(query))
    names = mentioned_names(text, known_names)
    relations = (
        asyncio.ensure_future(graph.neighbourhood(scopes, names, limit=MAX_RELATIONS))
        if graph is not None and names
        else None
    )
    parts: dict[str, asyncio.Future[Any]] = {"states": states, "details": details}
    if relations is not None:
        parts["graph"] = relations
    await asyncio.wait(parts.values(), timeout=budget)
    missed = [name for name, part in parts.items() if not _answered(name, part)]
    if counters is not None:
        counters.turns += 1
        counters.missed.update(missed)
    return RetrievedMemory(
        states=tuple(states.result()[:MAX_STATES]) if "states" not in missed else (),
        details=tuple(details.result()[:MAX_DETAILS]) if "details" not in missed else (),
        relations=tuple(relations.result()[:MAX_RELATIONS])
        if relations is not None and "graph" not in missed
        else (),
        missed=tuple(missed),
    )


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


def render(found: RetrievedMemory) -> str | None:
    """Return the memories as lines of quoted data, conclusions first; None when empty."""
    lines: list[str] = []
    for record in found.states:
        lines.append(f"conclusion on {_quoted(record.topic or '')}: {_quoted(record.text)}")
    for hit in found.details:
        label = "summary" if hit.record.kind == "summary" else "remembered"
        lines.append(f"{label}: {_quoted(hit.record.text)}")
    for relation in found.relations:
        lines.append(
            "relation: "
            f"{_quoted(relation.subject)} {_quoted(relation.predicate)} {_quoted(relation.object)}"
        )
    if not lines:
        return None
    text = ""
    for line in lines:
        if len(text) + len(line) + 1 > MAX_RENDERED_CHARS:
            break
        text = f"{text}\n{line}" if text else line
    return text


def _quoted(text: str) -> str:
    """Return ``text`` as one JSON string: quotes and line breaks escaped."""
    return json.dumps(text, ensure_ascii=False)
