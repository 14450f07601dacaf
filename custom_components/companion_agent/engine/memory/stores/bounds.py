"""How much each memory scope keeps, and when a store checks: bounds for every backend.

A store counts its adds; every ``check_every`` of them it prunes the scopes written since
down to their bounds (so a scope may run over a bound by fewer than ``check_every``
records between two checks, and no single add pays for a check).
"""

from __future__ import annotations

from dataclasses import dataclass

type ScopeKey = tuple[str, str, str]
"""A scope as ``(agent_id, environment, owner)``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBounds:
    """How much one scope keeps, and how often the store checks."""

    details: int = 20_000
    """Detail records, oldest go first."""
    summaries: int = 2_000
    """Session summaries, a cap of their own (they are fewer and longer), oldest first."""
    retired_per_topic: int = 20
    """Retired versions of each state topic; the current conclusion never goes."""
    relations: int = 50_000
    """Graph relations (embedded graph only), least recently updated first."""
    check_every: int = 64


class PruneSchedule:
    """Which scopes were written since the last check, and whether a check is due."""

    def __init__(self, every: int) -> None:
        """Check after every ``every`` writes."""
        self._every = max(1, every)
        self._writes = 0
        self._written: set[ScopeKey] = set()

    def due(self, scopes: list[ScopeKey]) -> list[ScopeKey]:
        """Note writes to ``scopes``; return the scopes to check now (none until due)."""
        self._writes += len(scopes)
        self._written.update(scopes)
        if self._writes < self._every:
            return []
        written = sorted(self._written)
        self._writes = 0
        self._written.clear()
        return written
