"""What the outbox holds: the JSON of each kind of entry, and screening it by tombstones.

Four kinds of entry, each a JSON payload that says whose it is (its scope), when it was
said (``at``) and where it came from (``provenance``):

- ``exchange``: one finished turn (the person's words, what they were shown, which memory
  model reads it); processing it leaves its extracted memories as follow-up entries;
- ``add``: details or summaries, added in one call;
- ``state``: one conclusion; the current one on the topic is superseded;
- ``graph``: entities and relations, merged in one call.

``screen_entry`` is the outbox's screen: it returns a payload less what tombstones refuse
(a whole entry of a forgotten scope or statement, one memory of a batch, one relation of a
merge), or None when nothing is left. An entry written before statements were kept is read
with its legacy statement (``provenance``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import cast

from ...json_types import JSONObject, JSONValue
from ..models import GraphFacts, MemoryKind, MemoryScope, NewMemory, Relation
from ..provenance import Provenance, dump_provenance, load_provenance
from ..stores.inputs import clean_name, name_key
from ..tiers.extraction import MAX_INPUT_CHARS, clean_memory
from .tombstones import Tombstone, graph_id, new_memory_keys, statement_keys

KINDS: frozenset[str] = frozenset({"detail", "state", "summary"})


def dump_scope(scope: MemoryScope) -> JSONObject:
    """Return a scope as JSON."""
    return {"agent_id": scope.agent_id, "owner": scope.owner, "environment": scope.environment}


def load_scope(data: JSONValue) -> MemoryScope:
    """Return a scope from JSON; raise on a bad shape."""
    row = _object(data)
    return MemoryScope(
        agent_id=json_str(row["agent_id"]),
        owner=json_str(row["owner"]),
        environment=json_str(row["environment"]),
    )


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
        "provenance": cast(JSONObject, dump_provenance(memory.provenance)),
    }


def load_memory(data: JSONValue) -> NewMemory:
    """Return a new memory from JSON; raise on a bad shape (no provenance: the legacy one)."""
    row = _object(data)
    kind, topic, at = row["kind"], row["topic"], row["at"]
    if kind not in KINDS:
        raise ValueError(f"unknown memory kind {kind!r}")
    source = json_str(row["source"])
    said = None if at is None else datetime.fromisoformat(json_str(at))
    return NewMemory(
        scope=load_scope(row["scope"]),
        text=json_str(row["text"]),
        kind=cast(MemoryKind, kind),
        topic=None if topic is None else json_str(topic),
        source=source,
        at=said,
        names=tuple(json_str(name) for name in json_list(row.get("names", []))),
        provenance=load_provenance(row.get("provenance"), source, said),
    )


def exchange_entry(
    scope: MemoryScope,
    user_text: str,
    assistant_text: str,
    *,
    source: str,
    model: str | None,
    at: datetime,
    provenance: Provenance,
) -> JSONObject:
    """Return the payload of an ``exchange`` entry: bounded, without images, as extracted."""
    return {
        "scope": dump_scope(scope),
        "user": clean_memory(user_text, MAX_INPUT_CHARS),
        "assistant": clean_memory(assistant_text, MAX_INPUT_CHARS),
        "source": source,
        "model": model,
        "at": at.isoformat(),
        "provenance": cast(JSONObject, dump_provenance(provenance)),
    }


def graph_entry(scope: MemoryScope, facts: GraphFacts) -> JSONObject:
    """Return the payload of a ``graph`` entry."""
    return {
        "scope": dump_scope(scope),
        "entities": list(facts.entities),
        "relations": [[r.subject, r.predicate, r.object] for r in facts.relations],
        "source": facts.source,
        "at": facts.at.isoformat() if facts.at else None,
        "provenance": cast(JSONObject, dump_provenance(facts.provenance)),
    }


def load_facts(data: JSONObject) -> GraphFacts:
    """Return the graph facts of a ``graph`` entry."""
    relations = []
    for row in json_list(data["relations"]):
        subject, predicate, obj = json_list(row)
        relations.append(
            Relation(subject=json_str(subject), predicate=json_str(predicate), object=json_str(obj))
        )
    at, source = load_at(data), json_str(data["source"])
    return GraphFacts(
        entities=tuple(json_str(name) for name in json_list(data["entities"])),
        relations=tuple(relations),
        source=source,
        at=at,
        provenance=load_provenance(data.get("provenance"), source, at),
    )


def load_at(data: JSONObject) -> datetime | None:
    """Return when an entry's exchange or facts were said (None when it does not say)."""
    at = data.get("at")
    return datetime.fromisoformat(at) if isinstance(at, str) else None


def load_origin(data: JSONObject) -> Provenance:
    """Return the provenance of an ``exchange`` entry (its legacy statement if it has none)."""
    source = data.get("source")
    return load_provenance(
        data.get("provenance"), source if isinstance(source, str) else "", load_at(data)
    )


def screen_entry(
    kind: str, payload: JSONObject, tombstones: Sequence[Tombstone]
) -> JSONObject | None:
    """Return ``payload`` less what ``tombstones`` refuse; None when nothing is left.

    A payload whose shape cannot be read is kept as it is (processing sets it aside).
    """
    if not tombstones:
        return payload
    try:
        match kind:
            case "add":
                rows = [m for m in json_list(payload["memories"]) if not _refused(m, tombstones)]
                return {**payload, "memories": cast(JSONValue, rows)} if rows else None
            case "state":
                return None if _refused(payload["memory"], tombstones) else payload
            case "graph":
                return _screened_facts(payload, tombstones)
            case _:
                scope, at = load_scope(payload["scope"]), load_at(payload)
                keys = statement_keys(load_origin(payload).statement)
                return None if any(t.covers(scope, at, keys) for t in tombstones) else payload
    except (KeyError, TypeError, ValueError):
        return payload


def _refused(row: JSONValue, tombstones: Sequence[Tombstone]) -> bool:
    """Say whether the tombstones refuse one memory of a payload.

    A memory that cannot be read whole is judged by its scope alone (forget wins).
    """
    try:
        memory = load_memory(row)
    except (KeyError, TypeError, ValueError):
        scope, at = load_scope(_object(row)["scope"]), load_at(_object(row))
        return any(t.key is None and t.covers(scope, at) for t in tombstones)
    keys = new_memory_keys(memory)
    return any(t.covers(memory.scope, memory.at, keys) for t in tombstones)


def _screened_facts(payload: JSONObject, tombstones: Sequence[Tombstone]) -> JSONObject | None:
    """Return a graph payload less its refused entities and relations (None: all of it)."""
    scope, facts = load_scope(payload["scope"]), load_facts(payload)
    left = facts_left(scope, facts, tombstones)
    if left is None:
        return None
    return {**payload, **graph_entry(scope, left)}


def facts_left(
    scope: MemoryScope, facts: GraphFacts, tombstones: Sequence[Tombstone]
) -> GraphFacts | None:
    """Return ``facts`` less the entities and relations refused (None: nothing is left).

    A relation goes with either of its entities; all of them go with their statement.
    """
    statement = statement_keys(facts.provenance.statement)
    if any(t.covers(scope, facts.at, statement) for t in tombstones):
        return None
    keyed = {t.key for t in tombstones if t.key is not None and t.covers(scope, facts.at, (t.key,))}
    if not keyed:
        return facts
    entities = tuple(name for name in facts.entities if _entity(scope, name) not in keyed)
    relations = tuple(
        r
        for r in facts.relations
        if not keyed & {_relation(scope, r), _entity(scope, r.subject), _entity(scope, r.object)}
    )
    if not entities and not relations:
        return None
    return replace(facts, entities=entities, relations=relations)


def fact_keys(scope: MemoryScope, facts: GraphFacts) -> set[str]:
    """Return the keys tombstones of ``facts`` name: their ids and their statement's."""
    keys = {_entity(scope, name) for name in facts.entities}
    for found in facts.relations:
        keys |= {_relation(scope, found), _entity(scope, found.subject)}
        keys.add(_entity(scope, found.object))
    return keys | set(statement_keys(facts.provenance.statement))


def _entity(scope: MemoryScope, name: str) -> str:
    """Return the id of the entity a name names."""
    return graph_id("ent", scope, name_key(clean_name(name)))


def _relation(scope: MemoryScope, found: Relation) -> str:
    """Return the id of a relation."""
    keys = (name_key(clean_name(n)) for n in (found.subject, found.predicate, found.object))
    return graph_id("rel", scope, *keys)


def _object(value: JSONValue) -> JSONObject:
    """Return a JSON object; raise on anything else."""
    if not isinstance(value, dict):
        raise TypeError("expected an object")
    return value


def json_list(value: JSONValue) -> list[JSONValue]:
    """Return a JSON list; raise on anything else."""
    if not isinstance(value, list):
        raise TypeError("expected a list")
    return value


def json_str(value: JSONValue) -> str:
    """Return a JSON string; raise on anything else."""
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value
