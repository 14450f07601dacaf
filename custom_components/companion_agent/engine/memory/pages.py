"""Export pages: one page of a store's records or a graph's facts, newest first, and totals.

``export_memories`` reads a persona's memory a page at a time (``page_bounds``: at most
``MAX_PAGE`` a page), so the newest are always reachable and a page stays bounded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .models import MAX_PAGE, MemoryRecord, MemoryScope, Relation
from .provenance import Provenance


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphItem:
    """One exported entity or relation of the graph, with its id and where it came from.

    ``relation`` is None for an entity (``name`` is its name). The id is made from the scope
    and the normalised names, so the same fact merged again keeps it; ``forget`` takes it.
    """

    id: str
    scope: MemoryScope
    name: str = ""
    relation: Relation | None = None
    source: str = ""
    at: datetime | None = None
    provenance: Provenance = field(default_factory=Provenance)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportPage:
    """One page of an export, newest first, and how many records there are in all."""

    records: tuple[MemoryRecord, ...] = ()
    total: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphPage:
    """One page of the graph's export, newest first, and how many of each there are."""

    entities: tuple[GraphItem, ...] = ()
    relations: tuple[GraphItem, ...] = ()
    total_entities: int = 0
    total_relations: int = 0


def page_bounds(offset: int, limit: int) -> tuple[int, int]:
    """Return an export page's ``offset`` (at least 0) and ``limit`` (1..MAX_PAGE)."""
    return max(0, offset), max(1, min(limit, MAX_PAGE))
