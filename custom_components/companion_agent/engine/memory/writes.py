"""What the outbox holds and how each entry reaches the store.

Four kinds of entry, each a JSON payload:

- ``exchange``: one finished turn (the person's words, what they were shown, which memory
  model reads it). Processing asks the model for an ``Extraction`` and leaves its memories
  as follow-up entries; a bad answer costs that memory (no follow-ups), an unreachable
  model keeps the entry for later.
- ``add``: details or summaries, added in one call.
- ``state``: one conclusion; the current one on the topic is superseded.
- ``graph``: entities and relations, merged in one call.

Store errors are re-raised for the outbox to tell an outage (its probe fails) from an
entry the store will never take.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import cast

from ..errors import MemoryAnswerError, MemoryStoreError, MemoryUnavailableError
from ..json_types import JSONObject, JSONValue
from .answers import JsonAnswers
from .extraction import MAX_INPUT_CHARS, clean_memory, extract
from .outbox import FollowUps, OutboxEntry
from .types import (
    Forget,
    GraphFacts,
    GraphStore,
    MemoryKind,
    MemoryScope,
    MemoryStore,
    NewMemory,
    Relation,
)

_LOGGER = logging.getLogger(__name__)

KINDS: frozenset[str] = frozenset({"detail", "state", "summary"})
MAX_NAMES = 16

type AnswersFor = Callable[[str | None], JsonAnswers | None]
type NamesListener = Callable[[MemoryScope, tuple[str, ...]], None]


def dump_scope(scope: MemoryScope) -> JSONObject:
    """Return a scope as JSON."""
    return {"agent_id": scope.agent_id, "owner": scope.owner, "environment": scope.environment}


def load_scope(data: JSONValue) -> MemoryScope:
    """Return a scope from JSON; raise on a bad shape."""
    row = _object(data)
    return MemoryScope(
        agent_id=_str(row["agent_id"]),
        owner=_str(row["owner"]),
        environment=_str(row["environment"]),
    )


def forgotten_by(what: Forget) -> Callable[[OutboxEntry], bool]:
    """Return a test of whether a waiting entry holds memories ``what`` forgets."""

    def matches(entry: OutboxEntry) -> bool:
        """Say whether any scope of the entry is one ``what`` names."""
        data = entry.payload
        rows = [data.get("scope"), *(_memory_scopes(data))]
        scopes = [load_scope(row) for row in rows if isinstance(row, dict)]
        return any(
            scope.environment == what.environment
            and (scope.owner == what.owner or scope.agent_id == what.agent_id)
            for scope in scopes
        )

    return matches


def _memory_scopes(data: JSONObject) -> list[JSONValue]:
    """Return the scopes of the memories an ``add`` or ``state`` entry carries."""
    listed = data.get("memories")
    single = data.get("memory")
    memories = [*(listed if isinstance(listed, list) else ()), single]
    return [m.get("scope") for m in memories if isinstance(m, dict)]


def dump_memory(memory: NewMemory) -> JSONObject:
    """Return a new memory as JSON."""
    return {
        "scope": dump_scope(memory.scope),
        "text": memory.text,
        "kind": memory.kind,
        "topic": memory.topic,
        "source": memory.source,
        "at": memory.at.isoformat() if memory.at else None,
        "names": list(memory.names),
    }


def load_memory(data: JSONValue) -> NewMemory:
    """Return a new memory from JSON; raise on a bad shape."""
    row = _object(data)
    kind, topic, at = row["kind"], row["topic"], row["at"]
    if kind not in KINDS:
        raise ValueError(f"unknown memory kind {kind!r}")
    return NewMemory(
        scope=load_scope(row["scope"]),
        text=_str(row["text"]),
        kind=cast(MemoryKind, kind),
        topic=None if topic is None else _str(topic),
        source=_str(row["source"]),
        at=None if at is None else datetime.fromisoformat(_str(at)),
        names=tuple(_str(name) for name in _list(row.get("names", []))),
    )


def exchange_entry(
    scope: MemoryScope,
    user_text: str,
    assistant_text: str,
    *,
    source: str,
    model: str | None,
    at: datetime,
) -> JSONObject:
    """Return the payload of an ``exchange`` entry: bounded, without images, as extracted."""
    return {
        "scope": dump_scope(scope),
        "user": clean_memory(user_text, MAX_INPUT_CHARS),
        "assistant": clean_memory(assistant_text, MAX_INPUT_CHARS),
        "source": source,
        "model": model,
        "at": at.isoformat(),
    }


class MemoryWriter:
    """Process outbox entries into the store and the graph."""

    def __init__(
        self,
        store: MemoryStore,
        graph: GraphStore | None,
        answers_for: AnswersFor,
        *,
        on_names: NamesListener | None = None,
    ) -> None:
        """Write to ``store`` (and ``graph``); ``answers_for`` names a model's extractor."""
        self._store = store
        self._graph = graph
        self._answers_for = answers_for
        self._on_names = on_names
        self.bad_answers = 0

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
                memories = [load_memory(row) for row in _list(data["memories"])]
                await self._store.add(memories)
            case "state":
                await self._store.supersede(load_memory(data["memory"]))
            case "graph":
                if self._graph is not None:
                    await self._graph.merge(load_scope(data["scope"]), _facts(data))
            case _:
                raise ValueError(f"unknown outbox entry kind {entry.kind!r}")
        return ()

    async def _extract(self, data: JSONObject) -> FollowUps:
        """Extract memories from an exchange and return them as follow-up entries."""
        scope = load_scope(data["scope"])
        model = data["model"]
        answers = self._answers_for(None if model is None else _str(model))
        if answers is None:
            return ()
        states = await self._store.current_states(scope.readable())
        topics = [record.topic for record in states if record.topic]
        try:
            found = await extract(answers, _str(data["user"]), _str(data["assistant"]), topics)
        except MemoryAnswerError as err:
            self.bad_answers += 1
            _LOGGER.info("Memory extraction gave nothing usable: %s", err)
            return ()
        source, at = _str(data["source"]), datetime.fromisoformat(_str(data["at"]))
        follow: list[tuple[str, JSONObject]] = []
        if found.facts:
            details = [
                dump_memory(
                    NewMemory(
                        scope=scope,
                        text=fact,
                        source=source,
                        at=at,
                        names=_named_in(fact, found.entities),
                    )
                )
                for fact in found.facts
            ]
            follow.append(("add", {"memories": cast(list[JSONValue], details)}))
        for topic, text in found.conclusions:
            memory = NewMemory(
                scope=scope, text=text, kind="state", topic=topic, source=source, at=at
            )
            follow.append(("state", {"memory": dump_memory(memory)}))
        if self._graph is not None and (found.entities or found.relations):
            follow.append(
                (
                    "graph",
                    {
                        "scope": dump_scope(scope),
                        "entities": list(found.entities),
                        "relations": [[r.subject, r.predicate, r.object] for r in found.relations],
                        "source": source,
                    },
                )
            )
        if found.entities and self._on_names is not None:
            self._on_names(scope, found.entities)
        return follow


def _named_in(text: str, entities: tuple[str, ...]) -> tuple[str, ...]:
    """Return the entities ``text`` names (searched as the memory's names)."""
    lowered = text.casefold()
    return tuple(name for name in entities if name and name.casefold() in lowered)[:MAX_NAMES]


def _facts(data: JSONObject) -> GraphFacts:
    """Return the graph facts of a ``graph`` entry."""
    relations = []
    for row in _list(data["relations"]):
        subject, predicate, obj = _list(row)
        relations.append(
            Relation(subject=_str(subject), predicate=_str(predicate), object=_str(obj))
        )
    return GraphFacts(
        entities=tuple(_str(name) for name in _list(data["entities"])),
        relations=tuple(relations),
        source=_str(data["source"]),
    )


def _object(value: JSONValue) -> JSONObject:
    """Return a JSON object; raise on anything else."""
    if not isinstance(value, dict):
        raise TypeError("expected an object")
    return value


def _list(value: JSONValue) -> list[JSONValue]:
    """Return a JSON list; raise on anything else."""
    if not isinstance(value, list):
        raise TypeError("expected a list")
    return value


def _str(value: JSONValue) -> str:
    """Return a JSON string; raise on anything else."""
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value
