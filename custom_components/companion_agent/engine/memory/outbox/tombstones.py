"""Tombstones: what a forget leaves, with a time that every later write checks (forget wins).

A ``Tombstone`` names a scope — a persona, a person (across personas), one person of one
persona, the household — or one remembered thing in a scope (a conclusion's topic, a
detail's text, one entity or relation of the graph, or one statement: whatever was derived
from it), and the time of the forget. A write dated at or before it (``NewMemory.at``: when
it was said; a graph fact's ``at``; an exchange's start) is refused, whatever was running
when the forget came: a queued outbox entry, an extraction or a summary the model was still
answering, a turn still being answered, an embedding on its way. Stores that have
transactions check it inside the write's own transaction (the embedded store, the outbox,
the exchange store); mem0 and Neo4j are checked before and after each write, and what
slipped through is deleted.

Content keys: ``topic:<folded topic>`` for a conclusion, ``text:<hash of folded text>`` for a
detail or summary, and the graph's own ids (``rel-…``, ``ent-…``, made from the scope and the
normalised names, so a fact merged again has the same one). A write derived from a
statement also carries ``statement:<id>`` (``provenance.statement``): forgetting a memory
leaves a tombstone of its statement too, so whatever the statement's extraction still
writes is refused, whatever its content key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from ...json_types import JSONObject
from ..models import Forget, MemoryRecord, MemoryScope, NewMemory
from ..retrieval.keywords import fold

MAX_TOMBSTONES = 10_000
STATEMENT = "statement:"
"""How the key of a statement's tombstone begins."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tombstone:
    """A forget: its scope (None: any persona, any owner), one content ``key`` or all, its time."""

    environment: str
    agent_id: str | None = None
    owner: str | None = None
    key: str | None = None
    at: datetime

    def covers(self, scope: MemoryScope, said: datetime | None, keys: Iterable[str] = ()) -> bool:
        """Say whether a write to ``scope`` said at ``said`` (with these content keys) is refused.

        A write that does not say when it was said is taken as older than any forget.
        """
        if scope.environment != self.environment:
            return False
        if self.agent_id is not None and scope.agent_id != self.agent_id:
            return False
        if self.owner is not None and scope.owner != self.owner:
            return False
        if self.key is not None and self.key not in keys:
            return False
        return said is None or _aware(said) <= self.at

    def as_forget(self) -> Forget:
        """Return the forget that deletes what this tombstone refuses (applied again)."""
        if self.key is not None and self.key.startswith(STATEMENT):
            return Forget(
                statement=self.key.removeprefix(STATEMENT), agent_id=self.agent_id,
                owner=self.owner, environment=self.environment, at=self.at,
            )  # fmt: skip
        if self.key is not None and self.agent_id is None and self.owner is None:
            return Forget(record_id=self.key, environment=self.environment, at=self.at)
        return Forget(
            agent_id=self.agent_id, owner=self.owner, environment=self.environment, at=self.at
        )


def tombstone_of(what: Forget, record: MemoryRecord | None = None) -> Tombstone | None:
    """Return the tombstone ``what`` leaves (a record's needs the record, or its graph id).

    None when a record id names nothing that can come back (no such record). A record's
    statement leaves a tombstone of its own: that of its ``statement_forget``.
    """
    at = _aware(what.moment)
    if what.statement is not None:
        return Tombstone(
            environment=what.environment, agent_id=what.agent_id, owner=what.owner,
            key=STATEMENT + what.statement, at=at,
        )  # fmt: skip
    if what.record_id is None:
        return Tombstone(
            environment=what.environment, agent_id=what.agent_id, owner=what.owner, at=at
        )
    if record is None:
        if what.record_id.startswith(("rel-", "ent-")):
            return Tombstone(environment=what.environment, key=what.record_id, at=at)
        return None
    scope = record.scope
    key = memory_key(record.kind == "state", record.topic, record.text)
    return Tombstone(
        environment=scope.environment, agent_id=scope.agent_id, owner=scope.owner, key=key, at=at
    )


def statement_forget(record: MemoryRecord, at: datetime) -> Forget | None:
    """Return the forget of everything ``record``'s statement left (None: it has none)."""
    statement = record.provenance.statement
    if statement is None:
        return None
    scope = record.scope
    return Forget(
        statement=statement, agent_id=scope.agent_id, owner=scope.owner,
        environment=scope.environment, at=at,
    )  # fmt: skip


def statement_keys(statement: str | None) -> tuple[str, ...]:
    """Return the key a write derived from ``statement`` carries (none without one)."""
    return () if statement is None else (STATEMENT + statement,)


def memory_key(state: bool, topic: str | None, text: str) -> str:
    """Return the content key of a conclusion (its topic) or a detail (its text)."""
    if state and topic:
        return f"topic:{' '.join(fold(topic).split())}"
    folded = " ".join(fold(text).split())
    return f"text:{hashlib.sha256(folded.encode('utf-8', 'replace')).hexdigest()[:32]}"


def new_memory_keys(memory: NewMemory) -> tuple[str, ...]:
    """Return the keys of a memory about to be written: its content's, its statement's."""
    content = memory_key(memory.kind == "state", memory.topic, memory.text)
    return (content, *statement_keys(memory.provenance.statement))


def record_keys(record: MemoryRecord) -> tuple[str, ...]:
    """Return the keys of a stored record: its content's, its statement's."""
    content = memory_key(record.kind == "state", record.topic, record.text)
    return (content, *statement_keys(record.provenance.statement))


def graph_id(kind: str, scope: MemoryScope, *names: str) -> str:
    """Return the id of an entity (``ent``) or relation (``rel``) from its scope and keys."""
    parts = (scope.agent_id, scope.environment, scope.owner, *names)
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:32]
    return f"{kind}-{digest}"


class ForgetLedger:
    """The tombstones one memory knows (loaded from disk at start), newest per scope kept."""

    def __init__(self, tombstones: Iterable[Tombstone] = ()) -> None:
        """Start with ``tombstones`` (what the outbox file holds)."""
        self._latest: dict[tuple[str, str | None, str | None, str | None], Tombstone] = {}
        for tombstone in tombstones:
            self.add(tombstone)

    def __len__(self) -> int:
        """Return how many tombstones are held."""
        return len(self._latest)

    def add(self, tombstone: Tombstone) -> None:
        """Hold ``tombstone`` (a later one of the same scope and key replaces it); bounded."""
        key = (tombstone.environment, tombstone.agent_id, tombstone.owner, tombstone.key)
        held = self._latest.pop(key, None)
        self._latest[key] = tombstone if held is None or held.at <= tombstone.at else held
        while len(self._latest) > MAX_TOMBSTONES:
            self._latest.pop(next(iter(self._latest)))

    def covers(self, scope: MemoryScope, said: datetime | None, keys: Iterable[str] = ()) -> bool:
        """Say whether any tombstone refuses a write to ``scope`` said at ``said``."""
        wanted = tuple(keys)
        return any(t.covers(scope, said, wanted) for t in self._latest.values())

    @property
    def tombstones(self) -> list[Tombstone]:
        """Return every tombstone held."""
        return list(self._latest.values())

    def covering(self, scope: MemoryScope, said: datetime | None) -> list[Tombstone]:
        """Return the tombstones of whole scopes that refuse a write to ``scope`` at ``said``."""
        return [t for t in self._latest.values() if t.key is None and t.covers(scope, said)]

    def keyed(self, scope: MemoryScope, said: datetime | None) -> set[str]:
        """Return the content keys refused for ``scope`` at ``said`` (one-record tombstones)."""
        return {
            t.key
            for t in self._latest.values()
            if t.key is not None and t.covers(scope, said, (t.key,))
        }


def dump_tombstone(tombstone: Tombstone) -> JSONObject:
    """Return a tombstone as JSON."""
    return {
        "environment": tombstone.environment,
        "agent_id": tombstone.agent_id,
        "owner": tombstone.owner,
        "key": tombstone.key,
        "at": tombstone.at.isoformat(),
    }


def load_tombstone(row: Mapping[str, object]) -> Tombstone:
    """Return a tombstone from JSON; raise on a bad shape."""

    def text(name: str) -> str | None:
        """Return one optional text field."""
        value = row.get(name)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} is not text")
        return value or None

    environment, at = text("environment"), text("at")
    if environment is None or at is None:
        raise TypeError("a tombstone needs an environment and a time")
    return Tombstone(
        environment=environment,
        agent_id=text("agent_id"),
        owner=text("owner"),
        key=text("key"),
        at=_aware(datetime.fromisoformat(at)),
    )


def _aware(moment: datetime) -> datetime:
    """Return ``moment`` in UTC (a naive time is taken as UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
