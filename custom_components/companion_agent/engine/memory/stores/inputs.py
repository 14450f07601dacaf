"""Memory input made valid at a store's boundary: scopes, texts, graph names; checked, bounded.

Every backend passes what it is given through here before storing or searching, so text
from anywhere (a model, a person, an import) reaches a store as valid Unicode of bounded
length, and a scope without a persona or owner is refused with a clear error.

**Graph names.** Both graph stores keep, for each entity and relation, the statements that
said it (at most ``MAX_STATEMENTS``), so forgetting one statement takes only what no other
statement said. An entity is known by its key (``name_key``: NFKC, case-folded, spaces
collapsed, so "Ann", "ann " and "ＡＮＮ" are one) and shown by the spelling first said
(``clean_name``). The embedded graph and the Neo4j graph both derive from
``BoundedGraph``, which checks and bounds a merge or a walk once, then hands the backend
cleaned scopes and keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ...chars import clean_text
from ...errors import MemoryInputError
from ..models import (
    MAX_LIMIT,
    MAX_TEXT_CHARS,
    GraphFacts,
    MemoryKind,
    MemoryScope,
    NewMemory,
    Relation,
    bounded,
)
from ..provenance import Provenance
from ..retrieval.keywords import fold

MAX_FIELD_CHARS = 200
MAX_BATCH = 500
"""The most memories one ``add`` takes."""
MAX_NAMES = 16


def clean_scope(scope: MemoryScope) -> MemoryScope:
    """Return ``scope`` with valid, bounded fields; raise when one of them is empty."""
    agent = clean_text(scope.agent_id, MAX_FIELD_CHARS)
    owner = clean_text(scope.owner, MAX_FIELD_CHARS)
    environment = clean_text(scope.environment, MAX_FIELD_CHARS)
    if not agent.strip() or not owner.strip() or not environment.strip():
        raise MemoryInputError("a memory scope needs an agent_id, an owner and an environment")
    return MemoryScope(agent_id=agent, owner=owner, environment=environment)


def memory_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """Return a memory's ``text`` (or a query's) valid, stripped, at most ``limit`` long."""
    return clean_text(text, limit, trim=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedMemory:
    """A memory checked and cut at the boundary: what every backend stores of it."""

    scope: MemoryScope
    text: str
    kind: MemoryKind
    topic: str | None
    topic_key: str | None
    """The topic folded (NFKC, case, spaces): two spellings of one topic share it."""
    source: str
    at: datetime
    names: tuple[str, ...] = ()
    """Who and what it is about, each valid and bounded (at most ``MAX_NAMES``)."""
    provenance: Provenance = field(default_factory=Provenance)
    """Who wrote it, from where, by which way, from which statement (a turn's without one:
    its legacy statement), each field valid and bounded."""


def checked_memory(memory: NewMemory) -> CheckedMemory:
    """Return ``memory`` checked and cut; raise ``MemoryInputError`` when it is unusable."""
    text = memory_text(memory.text)
    if not text:
        raise MemoryInputError("a memory needs some text")
    topic = memory_text(memory.topic, MAX_FIELD_CHARS) if memory.topic else ""
    if memory.kind == "state" and not topic:
        raise MemoryInputError("a state memory needs a topic")
    at = memory.at or datetime.now(UTC)
    return CheckedMemory(
        scope=clean_scope(memory.scope),
        text=text,
        kind=memory.kind,
        topic=topic or None,
        topic_key=" ".join(fold(topic).split()) if topic else None,
        source=clean_text(memory.source, MAX_FIELD_CHARS),
        at=at,
        names=tuple(
            name
            for name in (
                clean_text(n, MAX_FIELD_CHARS, trim=True) for n in memory.names[:MAX_NAMES]
            )
            if name
        ),
        provenance=memory.provenance.cleaned().said_at(at),
    )


def _name(name: str) -> str:
    """Return one name a memory is about, valid and bounded."""
    return clean_text(name, MAX_FIELD_CHARS, trim=True)


def checked_memories(memories: Sequence[NewMemory]) -> list[CheckedMemory]:
    """Return one ``add``'s memories checked; raise when there are more than ``MAX_BATCH``."""
    if len(memories) > MAX_BATCH:
        raise MemoryInputError(f"{len(memories)} memories at once, at most {MAX_BATCH}")
    return [checked_memory(memory) for memory in memories]


# Graph names: entity names cleaned and keyed, and the graph calls' bounds.
MAX_NAME_CHARS = 200
MAX_FACTS = 200
MAX_HOPS = 3
MAX_STATEMENTS = 100
"""The most statements one entity or relation lists; past it ``UNKNOWN_STATEMENT`` stands
for the rest (so forgetting statements never takes it)."""
UNKNOWN_STATEMENT = ""
"""The statement of a fact said by what is not known (no statement, or past the bound)."""
_SPACES = re.compile(r"\s+")


def clean_name(name: str) -> str:
    """Return a name made valid, spaces collapsed, at most ``MAX_NAME_CHARS``."""
    return clean_text(name, MAX_NAME_CHARS, one_line=True)


def name_key(name: str) -> str:
    """Return the key two spellings of one name share."""
    return _SPACES.sub(" ", fold(name)).strip()


def name_keys(names: Sequence[str]) -> list[str]:
    """Return the distinct keys of the first ``MAX_LIMIT`` names, sorted, empty ones dropped."""
    return sorted({name_key(clean_name(name)) for name in list(names)[:MAX_LIMIT]} - {""})


class BoundedGraph:
    """A ``GraphStore``'s merge and walk, bounded here; the backend does the rest."""

    async def merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge ``facts`` into ``scope``'s graph in one transaction (idempotent)."""
        cleaned = clean_scope(scope)
        if len(facts.entities) + len(facts.relations) > MAX_FACTS:
            raise MemoryInputError(f"more than {MAX_FACTS} graph facts at once")
        await self._merge(cleaned, facts)

    async def neighbourhood(
        self, scopes: Sequence[MemoryScope], names: Sequence[str], *, hops: int = 2, limit: int = 20
    ) -> list[Relation]:
        """Return relations within ``hops`` of the named entities, at most ``limit``."""
        keys = name_keys(names)
        cleaned = [clean_scope(scope) for scope in scopes]
        if not keys or not cleaned:
            return []
        return await self._walk(cleaned, keys, max(1, min(hops, MAX_HOPS)), bounded(limit))

    async def _merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge bounded ``facts`` into the cleaned ``scope`` (the backend's part)."""
        raise NotImplementedError

    async def _walk(
        self, scopes: list[MemoryScope], keys: list[str], hops: int, limit: int
    ) -> list[Relation]:
        """Return relations within ``hops`` of ``keys``, nearest and newest first (backend)."""
        raise NotImplementedError
