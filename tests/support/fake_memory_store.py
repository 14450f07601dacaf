"""A tiny in-memory memory store, only until the embedded SQLite store is on this branch."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from custom_components.companion_agent.engine.memory.types import (
    Forget,
    GraphFacts,
    MemoryHit,
    MemoryQuery,
    MemoryRecord,
    MemoryScope,
    NewMemory,
    Relation,
    bounded,
)


class FakeMemoryStore:
    """Keep records in a dict; search by shared words; a graph as a list of relations."""

    def __init__(self) -> None:
        """Start empty."""
        self.records: dict[str, MemoryRecord] = {}
        self.relations: dict[MemoryScope, list[Relation]] = {}
        self._ids = itertools.count(1)

    async def add(self, memories: Sequence[NewMemory]) -> list[MemoryRecord]:
        """Store memories."""
        return [self._record(memory) for memory in memories]

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return records sharing a word with the query."""
        words = set(re.findall(r"\w+", query.text.lower()))
        hits = [
            MemoryHit(record=r, score=1.0, channel="detail")
            for r in self.records.values()
            if r.scope in query.scopes
            and r.kind in query.kinds
            and (r.current or query.include_history)
            and words & set(re.findall(r"\w+", r.text.lower()))
        ]
        return hits[: bounded(query.limit)]

    async def supersede(self, memory: NewMemory) -> MemoryRecord:
        """Store a conclusion; retire the current one on the topic."""
        new = self._record(memory)
        for record in list(self.records.values()):
            if (
                record.id != new.id
                and record.kind == "state"
                and record.scope == memory.scope
                and record.topic == memory.topic
                and record.current
            ):
                self.records[record.id] = replace(
                    record, valid_until=datetime.now(UTC), superseded_by=new.id
                )
        return new

    async def rollback(self, record_id: str) -> MemoryRecord | None:
        """Retire a conclusion and bring back its predecessor."""
        record = self.records.pop(record_id, None)
        if record is None:
            return None
        for old in self.records.values():
            if old.superseded_by == record_id:
                back = replace(old, valid_until=None, superseded_by=None)
                self.records[old.id] = back
                return back
        return None

    async def current_states(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return current conclusions, newest first."""
        found = [r for r in self.records.values() if r.kind == "state" and r.current]
        return [r for r in reversed(found) if r.scope in scopes]

    async def forget(self, what: Forget) -> int:
        """Delete by id, owner or persona."""
        gone = [
            r.id
            for r in self.records.values()
            if r.id == what.record_id
            or (what.owner is not None and r.scope.owner == what.owner)
            or (what.agent_id is not None and r.scope.agent_id == what.agent_id)
        ]
        for record_id in gone:
            del self.records[record_id]
        return len(gone)

    async def export(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return every record of the scopes."""
        return [r for r in self.records.values() if r.scope in scopes]

    async def count(self) -> dict[str, int]:
        """Return counts by kind."""
        counts: dict[str, int] = {}
        for record in self.records.values():
            counts[record.kind] = counts.get(record.kind, 0) + 1
        return counts

    async def close(self) -> None:
        """Nothing to release."""

    async def merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Add relations."""
        known = self.relations.setdefault(scope, [])
        known.extend(r for r in facts.relations if r not in known)

    async def neighbourhood(
        self, scopes: Sequence[MemoryScope], names: Sequence[str], *, hops: int = 2, limit: int = 20
    ) -> list[Relation]:
        """Return relations touching a name."""
        lowered = {name.lower() for name in names}
        found = [
            r
            for scope in scopes
            for r in self.relations.get(scope, [])
            if r.subject.lower() in lowered or r.object.lower() in lowered
        ]
        return found[:limit]

    def _record(self, memory: NewMemory) -> MemoryRecord:
        """Make and keep a record."""
        now = memory.at or datetime.now(UTC)
        record = MemoryRecord(
            id=f"m{next(self._ids)}",
            scope=memory.scope,
            text=memory.text,
            kind=memory.kind,
            topic=memory.topic,
            source=memory.source,
            created_at=now,
            valid_from=now,
        )
        self.records[record.id] = record
        return record
