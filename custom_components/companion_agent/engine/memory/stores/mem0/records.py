"""How our memory records sit in mem0: ids, metadata, filters, and back to records.

A scope maps onto mem0's ids: ``agent_id`` is the persona, ``user_id`` the owner (a person
``user:<id>`` or ``household``), both percent-quoted because mem0 refuses whitespace in
ids; the environment is metadata. Every read filters on all three. mem0 has no validity
interval, so the state channel keeps its own in the metadata: ``current`` (what filters
use), ``valid_from``, ``valid_until``, ``superseded_by`` and ``supersedes`` (the record a
state retired, for rollback); ``topic_key`` is the folded topic a supersede matches on.
Provenance is five more keys (``via``, ``person``, ``device``, ``conversation``,
``statement``); a record written before them reads its provenance from its ``source``
(``provenance.load_provenance``), and a turn's record written before statements its legacy
statement (its conversation and ``valid_from``, which ``statement_filters`` match).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import cast
from urllib.parse import quote, unquote

from ...models import Forget, MemoryKind, MemoryRecord, MemoryScope
from ...provenance import dump_provenance, legacy_parts, load_provenance
from ..inputs import CheckedMemory
from ..sqlite.records_sql import iso

type Metadata = dict[str, object]
_KINDS: frozenset[str] = frozenset({"detail", "state", "summary"})


def prepare(checked: CheckedMemory) -> CheckedMemory:
    """Return a checked memory as mem0 keeps it: its time with a zone (UTC if it had none)."""
    at = checked.at
    return checked if at.tzinfo else replace(checked, at=at.replace(tzinfo=UTC))


def mem0_id(value: str) -> str:
    """Return a scope field as a mem0 id (no whitespace, reversible)."""
    return quote(value, safe=":@")


def scope_filters(scope: MemoryScope) -> Metadata:
    """Return the mem0 filters that match exactly ``scope``."""
    return {
        "agent_id": mem0_id(scope.agent_id),
        "user_id": mem0_id(scope.owner),
        "environment": scope.environment,
    }


def forget_filters(what: Forget) -> Metadata:
    """Return the mem0 filters that match what a person's and/or persona's forget names."""
    filters: Metadata = {"environment": what.environment}
    if what.owner is not None:
        filters["user_id"] = mem0_id(what.owner)
    if what.agent_id is not None:
        filters["agent_id"] = mem0_id(what.agent_id)
    return filters


def statement_filters(what: Forget) -> list[Metadata]:
    """Return the mem0 filters that match the records of a statement's forget.

    A legacy statement matches the records that have none by their conversation and time.
    """
    scope = MemoryScope(
        agent_id=what.agent_id or "", owner=what.owner or "", environment=what.environment
    )
    statement = what.statement or ""
    found: list[Metadata] = [{**scope_filters(scope), "statement": statement}]
    if (parts := legacy_parts(statement)) is not None:
        conversation, said = parts
        found.append({**scope_filters(scope), "conversation": conversation, "valid_from": said})
    return found


def metadata(memory: CheckedMemory, created_at: datetime, supersedes: str | None) -> Metadata:
    """Return the metadata mem0 keeps with ``memory`` (a current record)."""
    return {
        "environment": memory.scope.environment,
        "kind": memory.kind,
        "topic": memory.topic,
        "topic_key": memory.topic_key,
        "source": memory.source,
        "created_at": iso(created_at),
        "valid_from": iso(memory.at),
        "valid_until": None,
        "superseded_by": None,
        "supersedes": supersedes,
        "current": True,
        **dump_provenance(memory.provenance),
    }


def retired(at: datetime, superseded_by: str | None) -> Metadata:
    """Return the metadata update that retires a record at ``at``."""
    return {"valid_until": iso(at), "superseded_by": superseded_by, "current": False}


RESTORED: Metadata = {"valid_until": None, "superseded_by": None, "current": True}


def is_record_id(value: str) -> bool:
    """Say whether ``value`` can be a mem0 record id (a UUID)."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def record(item: Mapping[str, object] | None) -> MemoryRecord | None:
    """Return the record a mem0 item holds, or None when it is not one of ours."""
    if item is None:
        return None
    meta = item.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("kind") not in _KINDS:
        return None
    created = _moment(item.get("created_at")) or datetime.now(UTC)
    valid_from = _moment(meta.get("valid_from")) or created
    return MemoryRecord(
        id=str(item.get("id")),
        scope=MemoryScope(
            agent_id=unquote(str(item.get("agent_id", ""))),
            owner=unquote(str(item.get("user_id", ""))),
            environment=str(meta.get("environment", "")),
        ),
        text=str(item.get("memory", "")),
        kind=cast(MemoryKind, meta["kind"]),
        topic=_text_or_none(meta.get("topic")),
        source=str(meta.get("source") or ""),
        created_at=created,
        valid_from=valid_from,
        valid_until=_moment(meta.get("valid_until")),
        superseded_by=_text_or_none(meta.get("superseded_by")),
        provenance=load_provenance(meta, str(meta.get("source") or ""), valid_from),
    )


def supersedes(item: Mapping[str, object] | None) -> str | None:
    """Return the id of the record the item's state retired, if any."""
    meta = None if item is None else item.get("metadata")
    return _text_or_none(meta.get("supersedes")) if isinstance(meta, Mapping) else None


def environment(item: Mapping[str, object] | None) -> str | None:
    """Return the environment of a mem0 item, None when it has none."""
    meta = None if item is None else item.get("metadata")
    return _text_or_none(meta.get("environment")) if isinstance(meta, Mapping) else None


def _moment(value: object) -> datetime | None:
    """Return an ISO 8601 time as an aware datetime, None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _text_or_none(value: object) -> str | None:
    """Return ``value`` as text, None when empty."""
    return str(value) if value not in (None, "") else None
