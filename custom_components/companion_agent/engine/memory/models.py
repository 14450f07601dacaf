"""The memory protocol every backend implements, the records and pages that cross it, its check.

**Who remembers what.** Every record belongs to a ``MemoryScope``: the persona
(``agent_id``), the owner — one person (``user:<HA user id>``) or the ``household`` when a
turn has no user (a voice satellite usually has none) — and an environment tag, so tests
never land in a real store. What a turn may read is ``MemoryScope.readable()``: a person's
turn reads that person's memories and the household's; a household turn reads only the
household's; nothing ever crosses personas or environments.

**Two channels.** ``detail`` records are things said (found by keyword and vector);
``state`` records are ``topic → conclusion``: a newer conclusion on a topic supersedes the
older one, which is kept with ``valid_until`` and ``superseded_by`` so a wrong memory can be
traced and rolled back. ``summary`` records are session summaries (tier 2). Every record
and graph fact carries its ``Provenance`` (who wrote it, from where, by which way).

**Forget wins.** A ``Forget`` has a time: everything of its scope said at or before it goes,
and every later write dated at or before it is refused (see ``tombstones``).

**Export pages.** ``export_memories`` reads a persona's memory a page at a time
(``page_bounds``: at most ``MAX_PAGE`` a page, newest first, with totals), so the newest are
always reachable and a page stays bounded.

**Checks.** A backend's ``check()`` answers a ``BackendCheck``: whether it answered and,
if not, the form error key a host's setup form shows.

Every backend bounds what it returns (``MemoryQuery.limit``, at most ``MAX_LIMIT``), takes
and returns only these types, and is safe to call from the event loop (blocking work runs
off it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol

from ..errors import MemoryBackendError, MemoryBackendProblem, MemoryInputError, MemoryStoreError
from ..turn.exchanges import HOUSEHOLD, owner_of
from .provenance import Provenance

type MemoryKind = Literal["detail", "state", "summary"]
type Channel = Literal["state", "detail", "summary", "graph"]
MAX_LIMIT = 50
MAX_TEXT_CHARS = 2000
MAX_PAGE = 500
"""The most records one export page holds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryScope:
    """Whose memory: one persona, one owner (a person or the household), one environment."""

    agent_id: str
    owner: str = HOUSEHOLD
    environment: str = "production"

    @classmethod
    def for_turn(
        cls, agent_id: str, user_id: str | None, environment: str = "production"
    ) -> MemoryScope:
        """Return the scope a turn writes to: its person's, or the household's."""
        return cls(agent_id=agent_id, owner=owner_of(user_id), environment=environment)

    @property
    def household(self) -> MemoryScope:
        """Return the household scope of the same persona and environment."""
        return MemoryScope(agent_id=self.agent_id, environment=self.environment)

    def readable(self) -> tuple[MemoryScope, ...]:
        """Return the scopes a turn in this scope may read: its own, then the household's."""
        if self.owner == HOUSEHOLD:
            return (self,)
        return (self, self.household)


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMemory:
    """A memory to add: text in one scope, from one conversation; ``topic`` for state."""

    scope: MemoryScope
    text: str
    kind: MemoryKind = "detail"
    topic: str | None = None
    source: str = ""
    """The conversation id (or ``service``, ``import``) the memory came from."""
    at: datetime | None = None
    """When it was said; the store's clock when None. A search can filter by it; a forget
    after it wins over it."""
    names: tuple[str, ...] = ()
    """Who and what it is about (the speaker, the entities named): searched as a field."""
    provenance: Provenance = field(default_factory=Provenance)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """A stored memory with its history: current while ``valid_until`` is None."""

    id: str
    scope: MemoryScope
    text: str
    kind: MemoryKind
    topic: str | None
    source: str
    created_at: datetime
    valid_from: datetime
    valid_until: datetime | None = None
    superseded_by: str | None = None
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def current(self) -> bool:
        """Return whether the record still holds (not superseded, not retired)."""
        return self.valid_until is None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryQuery:
    """A search: text in the scopes a turn may read; at most ``limit`` hits."""

    text: str
    scopes: tuple[MemoryScope, ...]
    limit: int = 10
    kinds: frozenset[MemoryKind] = frozenset({"detail", "state", "summary"})
    include_history: bool = False
    """Also return superseded records (for tracing and export), never for a turn."""
    vector_wait: float | None = None
    """Seconds the search waits for the query's embedding; then keywords alone answer.

    None: the store's own query timeout. A turn sets it inside its retrieval budget.
    """
    asked_at: datetime | None = None
    """When the question is asked, for "yesterday", "last week" (None: now)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHit:
    """One search result: the record, its fused score (higher is better), its channel."""

    record: MemoryRecord
    score: float
    channel: Channel


@dataclass(frozen=True, slots=True, kw_only=True)
class Forget:
    """What to forget: one record id, one statement, or everything of a person, a persona.

    Either ``record_id`` alone; or ``statement`` with the ``owner`` and ``agent_id`` of its
    scope (every record and graph fact derived from that statement, see ``provenance``); or
    ``owner`` and/or ``agent_id`` (a person across personas, a whole persona, or one person
    of one persona); ``environment`` limits it to one environment. ``at`` is when it was
    asked (the store's clock when None): what was said at or before it goes, and a write
    dated at or before it is refused ever after.
    """

    record_id: str | None = None
    statement: str | None = None
    owner: str | None = None
    agent_id: str | None = None
    environment: str = "production"
    at: datetime | None = None

    @property
    def moment(self) -> datetime:
        """Return when the forget was asked (now when it does not say)."""
        return self.at or datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Relation:
    """One edge of the knowledge graph: ``subject —predicate→ object`` (entity names)."""

    subject: str
    predicate: str
    object: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphFacts:
    """A turn's entities and relations, merged in one transaction."""

    entities: tuple[str, ...] = ()
    relations: tuple[Relation, ...] = ()
    source: str = ""
    at: datetime | None = None
    provenance: Provenance = field(default_factory=Provenance)


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


class MemoryStore(Protocol):
    """The memory protocol: bounded search, add, supersede, forget, get, export."""

    async def add(self, memories: Sequence[NewMemory]) -> list[MemoryRecord]:
        """Store ``memories`` (one transaction) and return them as records."""
        ...

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return at most ``query.limit`` current records matching ``query.text``, best first."""
        ...

    async def supersede(self, memory: NewMemory) -> MemoryRecord | None:
        """Store a state conclusion; the current one on the same topic and scope retires.

        Shared by the backends that derive from this protocol: ``add`` sends a state
        through the state channel, which retires the current one. None when the store
        refuses it (a tombstone: it was said before a forget).
        """
        if memory.kind != "state" or not (memory.topic or "").strip():
            raise MemoryInputError("supersede takes a state memory with a topic")
        added = await self.add([memory])
        return added[0] if added else None

    async def rollback(
        self, record_id: str, environment: str = "production"
    ) -> MemoryRecord | None:
        """Retire a state of ``environment``; make the one it superseded current; return it."""
        ...

    async def current_states(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return the current state conclusions of ``scopes``, newest first (bounded)."""
        ...

    async def forget(self, what: Forget) -> int:
        """Delete what ``what`` names (said at or before ``what.at``), history included.

        A record goes with the states it superseded; a statement takes the records derived
        from it as if never said (a state one of them superseded holds again). Return how
        many records went.
        """
        ...

    async def get(self, record_id: str, environment: str = "production") -> MemoryRecord | None:
        """Return the record ``record_id`` of ``environment``, current or not, if it exists."""
        ...

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = MAX_PAGE
    ) -> ExportPage:
        """Return one page of the records of ``scopes``, superseded ones included, newest first."""
        ...

    async def count(self) -> dict[str, int]:
        """Return record counts by kind and current/retired: figures, never content."""
        ...

    async def close(self) -> None:
        """Release files, connections and threads."""
        ...


class GraphStore(Protocol):
    """The knowledge graph: entities and relations per scope, a bounded neighbourhood."""

    async def merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge ``facts`` into ``scope``'s graph in one transaction (idempotent)."""
        ...

    async def neighbourhood(
        self, scopes: Sequence[MemoryScope], names: Sequence[str], *, hops: int = 2, limit: int = 20
    ) -> list[Relation]:
        """Return relations within ``hops`` of the named entities, at most ``limit``."""
        ...

    async def forget(self, what: Forget) -> int:
        """Delete what ``what`` names (said at or before ``what.at``): a scope's graph, one
        entity (with its relations) or relation by id, or what one statement said (an entity
        or relation another statement also said stays); return how many relations went."""
        ...

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = MAX_PAGE
    ) -> GraphPage:
        """Return one page of the entities and relations of ``scopes``, newest first."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendCheck:
    """Whether a backend answered; ``problem`` (None when it did) is a form's error key."""

    backend: str
    problem: MemoryBackendProblem | None = None
    detail: str = ""
    """What went wrong, for a log line (never a secret)."""

    @property
    def ok(self) -> bool:
        """Return whether the backend answered and accepted the credentials."""
        return self.problem is None

    @classmethod
    def failed(cls, err: MemoryStoreError, backend: str = "") -> BackendCheck:
        """Return the check that ``err`` ended (a store error of ``backend``'s, if not its own)."""
        if isinstance(err, MemoryBackendError):
            return cls(backend=err.backend, problem=err.problem, detail=str(err))
        problem: MemoryBackendProblem = "cannot_connect" if err.retryable else "failed"
        return cls(backend=backend, problem=problem, detail=str(err))


def bounded(limit: int) -> int:
    """Return ``limit`` clamped to 1..MAX_LIMIT."""
    return max(1, min(limit, MAX_LIMIT))


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievedMemory:
    """What retrieval gathered for one turn, in the order it is shown to the model."""

    states: tuple[MemoryRecord, ...] = ()
    """Conclusions found by relevance: the person's, then the household's."""
    details: tuple[MemoryHit, ...] = ()
    relations: tuple[Relation, ...] = ()
    more_states: tuple[MemoryRecord, ...] = ()
    """The person's other conclusions (those the graph names first), shown if room is left."""
    missed: tuple[str, ...] = field(default=())
    """Which parts did not answer within the budget (counted, never fatal)."""
