"""How each outbox entry reaches the store and the graph, with forget winning every time.

An ``exchange`` asks the memory model for an ``Extraction`` and leaves its memories as
follow-up entries (dated when the exchange was said, with its provenance); a bad answer
costs that memory (no follow-ups), an unreachable model keeps the entry for later. ``add``,
``state`` and ``graph`` entries are written as they are (``payloads`` has their shapes).

Every write is checked against the ``ForgetLedger`` before it goes and again after it
went: a memory or fact said at or before a forget is never written, and one that slipped
in while the forget ran (mem0 and Neo4j have no transaction to share) is deleted at once,
so the later intent wins. The embedded store also checks inside its own transaction. A
write derived from a statement whose memory was forgotten is refused whatever it says (its
statement's tombstone), from the exchange before the model is asked to its last fact.

Store errors are re-raised for the outbox to tell an outage (its probe fails) from an
entry the store will never take.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import cast

from ...errors import (
    MemoryAnswerError,
    MemoryInputError,
    MemoryStoreError,
    MemoryUnavailableError,
)
from ...json_types import JSONObject, JSONValue
from ..answers import JsonAnswers
from ..models import (
    Forget,
    GraphFacts,
    GraphStore,
    MemoryRecord,
    MemoryScope,
    MemoryStore,
    NewMemory,
)
from ..provenance import Provenance
from ..tiers.extraction import extract
from .outbox import FollowUps, OutboxEntry
from .payloads import (
    dump_memory,
    fact_keys,
    facts_left,
    graph_entry,
    json_list,
    json_str,
    load_at,
    load_facts,
    load_memory,
    load_origin,
    load_scope,
)
from .tombstones import ForgetLedger, Tombstone, new_memory_keys, record_keys, statement_keys

_LOGGER = logging.getLogger(__name__)

MAX_NAMES = 16

type AnswersFor = Callable[[str | None], JsonAnswers | None]
type NamesListener = Callable[[MemoryScope, tuple[str, ...]], None]
type Queue = Callable[[str, JSONObject], Awaitable[object]]


class MemoryWriter:
    """Write memories and graph facts, and process outbox entries, behind the tombstones."""

    def __init__(
        self,
        store: MemoryStore,
        graph: GraphStore | None,
        answers_for: AnswersFor,
        *,
        ledger: ForgetLedger | None = None,
        on_names: NamesListener | None = None,
        queue: Queue | None = None,
    ) -> None:
        """Write to ``store`` (and ``graph``); ``answers_for`` names a model's extractor.

        ``queue`` puts an entry in the outbox (for writes the store cannot take now).
        """
        self._queue = queue
        self._store = store
        self._graph = graph
        self._answers_for = answers_for
        self.ledger = ForgetLedger() if ledger is None else ledger  # an empty one is falsy
        self._on_names = on_names
        self.bad_answers = 0
        self.refused = 0
        """Writes a tombstone refused (before, or deleted right after)."""

    def refuses(self, memory: NewMemory) -> bool:
        """Say whether a tombstone refuses ``memory`` (said at or before a forget of it)."""
        return self.ledger.covers(memory.scope, memory.at, new_memory_keys(memory))

    async def add(self, memories: Sequence[NewMemory]) -> list[MemoryRecord]:
        """Add the memories no tombstone refuses; delete any that a forget meanwhile covers."""
        kept = [memory for memory in memories if not self.refuses(memory)]
        self.refused += len(memories) - len(kept)
        if not kept:
            return []
        stored = await self._store.add(kept)
        return await self._undo_forgotten(stored)

    async def supersede(self, memory: NewMemory) -> MemoryRecord | None:
        """Store a conclusion unless a tombstone refuses it (then, or after, None)."""
        if self.refuses(memory):
            self.refused += 1
            return None
        record = await self._store.supersede(memory)
        if record is None:
            return None
        kept = await self._undo_forgotten([record])
        return kept[0] if kept else None

    async def write_or_queue(self, memory: NewMemory, within: float) -> MemoryRecord | None:
        """Write ``memory`` now (within ``within`` s), or queue it on disk; None: not written now.

        A memory the store refuses as input raises ``MemoryInputError``; one it cannot take
        now (down, slow) waits in the outbox.
        """
        try:
            async with asyncio.timeout(within):
                if memory.kind == "state":
                    return await self.supersede(memory)
                stored = await self.add([memory])
                return stored[0] if stored else None
        except MemoryInputError:
            raise
        except Exception as err:
            _LOGGER.warning("Memory store did not take a memory (%s); it is queued", err)
        await self.queue(memory)
        return None

    async def queue(self, memory: NewMemory) -> None:
        """Put one memory in the outbox (a conclusion as a ``state`` entry)."""
        if self._queue is None:
            return
        if memory.kind == "state":
            await self._queue("state", {"memory": dump_memory(memory)})
        else:
            await self._queue("add", {"memories": [dump_memory(memory)]})

    async def merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge what no tombstone refuses into the graph; undo it if a forget came meanwhile."""
        if self._graph is None:
            return
        left = facts_left(scope, facts, self.ledger.tombstones)
        if left is None:
            self.refused += 1
            return
        await self._graph.merge(scope, left)
        if facts_left(scope, left, self.ledger.tombstones) != left:
            for tombstone in self._refusing(scope, left):
                await self._graph.forget(tombstone.as_forget())

    async def process(self, entry: OutboxEntry) -> FollowUps:
        """Carry out one entry; return the entries it leaves behind.

        A store error that says a retry may help is an outage (the entry waits, no try is
        counted); any other error counts a try.
        """
        try:
            return await self._process(entry)
        except MemoryStoreError as err:
            if err.retryable:
                raise MemoryUnavailableError(str(err)) from err
            raise

    async def _process(self, entry: OutboxEntry) -> FollowUps:
        """Carry out one entry."""
        data = entry.payload
        match entry.kind:
            case "exchange":
                return await self._extract(data)
            case "add":
                await self.add([load_memory(row) for row in json_list(data["memories"])])
            case "state":
                await self.supersede(load_memory(data["memory"]))
            case "graph":
                await self.merge(load_scope(data["scope"]), load_facts(data))
            case _:
                raise ValueError(f"unknown outbox entry kind {entry.kind!r}")
        return ()

    def _refusing(self, scope: MemoryScope, facts: GraphFacts) -> list[Tombstone]:
        """Return the tombstones that refuse any of ``facts``: of the scope, the statement,
        or one of their entities and relations."""
        keys = self.ledger.keyed(scope, facts.at) & fact_keys(scope, facts)
        keyed = [t for t in self.ledger.tombstones if t.key in keys]
        return [*self.ledger.covering(scope, facts.at), *keyed]

    async def _undo_forgotten(self, stored: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """Delete the records a forget covered while they were written; return the rest."""
        kept: list[MemoryRecord] = []
        for record in stored:
            if self.ledger.covers(record.scope, record.valid_from, record_keys(record)):
                self.refused += 1
                await self._store.forget(
                    Forget(record_id=record.id, environment=record.scope.environment)
                )
            else:
                kept.append(record)
        return kept

    async def _extract(self, data: JSONObject) -> FollowUps:
        """Extract memories from an exchange and return them as follow-up entries."""
        scope, at = load_scope(data["scope"]), load_at(data)
        origin = load_origin(data)
        if self.ledger.covers(scope, at, statement_keys(origin.statement)):
            self.refused += 1
            return ()
        model = data["model"]
        answers = self._answers_for(None if model is None else json_str(model))
        if answers is None:
            return ()
        states = await self._store.current_states(scope.readable())
        known = [(record.topic, record.text) for record in states if record.topic]
        try:
            found = await extract(
                answers, json_str(data["user"]), json_str(data["assistant"]), known
            )
        except MemoryAnswerError as err:
            self.bad_answers += 1
            _LOGGER.info("Memory extraction gave nothing usable: %s", err)
            return ()
        source = json_str(data["source"])
        follow: list[tuple[str, JSONObject]] = []
        if found.facts:
            details = [
                dump_memory(
                    _said(scope, fact, source, at, origin, names=_named_in(fact, found.entities))
                )
                for fact in found.facts
            ]
            follow.append(("add", {"memories": cast(list[JSONValue], details)}))
        for topic, text in found.conclusions:
            memory = _said(scope, text, source, at, origin, topic=topic)
            follow.append(("state", {"memory": dump_memory(memory)}))
        if self._graph is not None and (found.entities or found.relations):
            facts = GraphFacts(
                entities=found.entities,
                relations=found.relations,
                source=source,
                at=at,
                provenance=origin,
            )
            follow.append(("graph", graph_entry(scope, facts)))
        if found.entities and self._on_names is not None:
            self._on_names(scope, found.entities)
        return follow


def _said(
    scope: MemoryScope,
    text: str,
    source: str,
    at: datetime | None,
    provenance: Provenance,
    *,
    topic: str | None = None,
    names: tuple[str, ...] = (),
) -> NewMemory:
    """Return a memory extracted from an exchange: dated when it was said, its provenance."""
    return NewMemory(
        scope=scope,
        text=text,
        kind="state" if topic else "detail",
        topic=topic,
        source=source,
        at=at,
        provenance=provenance,
        names=names,
    )


def _named_in(text: str, entities: tuple[str, ...]) -> tuple[str, ...]:
    """Return the entities ``text`` names (searched as the memory's names)."""
    lowered = text.casefold()
    return tuple(name for name in entities if name and name.casefold() in lowered)[:MAX_NAMES]
