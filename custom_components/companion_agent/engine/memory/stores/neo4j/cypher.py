"""The Cypher the Neo4j graph runs, and the parameters it sends (made fit for FalkorDB).

Every query text is a constant; every value is a parameter. The same texts run on Neo4j 5
and on FalkorDB 4.16's Bolt listener, which differs in three ways that matter here:

- it writes string parameters into the query text between single quotes, unescaped, so a
  quote ends the string (a value could inject Cypher) and a backslash is read as an
  escape: ``escaped`` escapes both, and the values then arrive exactly as sent;
- the query text with its parameters must stay under about 4 KB, or the server crashes:
  ``chunks`` cuts long lists into statements below ``FALKORDB_TEXT_BYTES``;
- ``CREATE INDEX … IF NOT EXISTS`` is refused (``INDEXES`` tries FalkorDB's form next).

A relation carries its id (``tombstones.graph_id``), when it was last said (``said_at``,
ISO 8601 in UTC, so strings compare as times) and its provenance. Who mentioned an entity
is a ``:CompanionMention`` node per owner (id, key, spelling, when, provenance): what an
export lists and a forget deletes; the ``:CompanionEntity`` nodes only join the relations.
Both keep ``statements``, the statements that said them (at most ``MAX_STATEMENTS``, then
``""`` for the rest): forgetting a statement takes it off them and deletes what is left
with none (a mention only while no relation of its owner touches its entity). One merged
before statements were kept has none: a legacy statement matches it by its conversation
and ``said_at`` (its last merge's).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import LiteralString

from ....chars import clean_text
from ...models import GraphFacts, MemoryScope
from ...outbox.tombstones import graph_id
from ...provenance import dump_provenance, legacy_parts
from ..inputs import (
    MAX_HOPS,
    MAX_NAME_CHARS,
    MAX_STATEMENTS,
    UNKNOWN_STATEMENT,
    clean_name,
    clean_scope,
    name_key,
)
from ..sqlite.records_sql import iso

LOGGER = logging.getLogger(__name__)

MAX_PATHS = 1000
FALKORDB_TEXT_BYTES = 3500
PROBE = "a\\\\b"
"""A value Neo4j returns as sent and FalkorDB, reading escapes, returns shorter."""

type Params = dict[str, object]
type RelationRow = dict[str, str]

MERGE_MENTIONS: LiteralString = """
UNWIND $mentions AS mention
MERGE (m:CompanionMention {id: mention.id})
ON CREATE SET m.agent_id = $agent_id, m.environment = $environment, m.owner = $owner,
  m.key = mention.key, m.name = mention.name, m.created_at = $at
SET m.said_at = CASE WHEN m.said_at IS NULL OR m.said_at < $at THEN $at ELSE m.said_at END,
  m.source = $source, m.via = $via, m.person = $person, m.device = $device,
  m.conversation = $conversation, m.statement = $statement,
  m.statements = CASE
    WHEN $statement IN coalesce(m.statements, []) THEN m.statements
    WHEN size(coalesce(m.statements, [])) < $max_statements
      THEN coalesce(m.statements, []) + [$statement]
    WHEN '' IN m.statements THEN m.statements
    ELSE m.statements + [''] END
WITH count(m) AS noted
UNWIND $entities AS entity
MERGE (n:CompanionEntity {agent_id: $agent_id, environment: $environment, key: entity})
ON CREATE SET n.created_at = $at
"""
"""Note who mentioned the entities (with the statement), and make their nodes."""
MERGE_RELATIONS: LiteralString = """
UNWIND $entities AS entity
MERGE (n:CompanionEntity {agent_id: $agent_id, environment: $environment, key: entity})
ON CREATE SET n.created_at = $at
WITH count(n) AS merged
UNWIND $relations AS rel
MATCH (a:CompanionEntity {agent_id: $agent_id, environment: $environment, key: rel.subject_key})
MATCH (b:CompanionEntity {agent_id: $agent_id, environment: $environment, key: rel.object_key})
MERGE (a)-[r:RELATES {owner: $owner, predicate_key: rel.predicate_key}]->(b)
ON CREATE SET r.agent_id = $agent_id, r.environment = $environment, r.subject = rel.subject,
  r.predicate = rel.predicate, r.object = rel.object, r.created_at = $at, r.id = rel.id
SET r.updated_at = $at, r.source = $source,
  r.said_at = CASE WHEN r.said_at IS NULL OR r.said_at < $at THEN $at ELSE r.said_at END,
  r.via = $via, r.person = $person, r.device = $device, r.conversation = $conversation,
  r.statement = $statement,
  r.statements = CASE
    WHEN $statement IN coalesce(r.statements, []) THEN r.statements
    WHEN size(coalesce(r.statements, [])) < $max_statements
      THEN coalesce(r.statements, []) + [$statement]
    WHEN '' IN r.statements THEN r.statements
    ELSE r.statements + [''] END
"""
"""Merge the relations (their end nodes first), each with the statement that said it.

A mention's and a relation's ``statements`` grow by the statement unless it is listed;
past ``MAX_STATEMENTS`` an ``""`` stands for the rest. Two texts, each short enough to
leave FalkorDB's bound room for the facts.
"""


def _walk(hops: LiteralString) -> LiteralString:
    """Return the neighbourhood query for one hop bound (a constant, never a value)."""
    return (
        f"MATCH p = (s:CompanionEntity)-[:RELATES*1..{hops}]-(:CompanionEntity) "
        "WHERE s.agent_id = $agent_id AND s.environment = $environment AND s.key IN $keys "
        "AND all(r IN relationships(p) WHERE r.owner IN $owners) "
        "WITH p ORDER BY length(p) LIMIT $max_paths "
        "UNWIND relationships(p) AS r "
        "WITH r, min(length(p)) AS distance "
        "RETURN r.subject AS subject, r.predicate AS predicate, r.object AS object, "
        "distance, r.updated_at AS updated "
        "ORDER BY distance, updated DESC LIMIT $limit"
    )


WALKS: dict[int, LiteralString] = {1: _walk("1"), 2: _walk("2"), 3: _walk("3")}
assert max(WALKS) == MAX_HOPS
_SAID = "(x.said_at IS NULL OR x.said_at <= $at)"
_PRUNE_NODES: LiteralString = (
    "MATCH (n:CompanionEntity) WHERE n.environment = $environment AND NOT (n)--() DELETE n"
)


def _forget(where: LiteralString) -> tuple[LiteralString, LiteralString, LiteralString]:
    """Return the statements that forget a scope's relations, mentions, then lone nodes."""
    return (
        "MATCH (:CompanionEntity)-[x:RELATES]->(:CompanionEntity) "
        f"WHERE {where} AND {_SAID} DELETE x RETURN count(x) AS gone",
        f"MATCH (x:CompanionMention) WHERE {where} AND {_SAID} DELETE x",
        _PRUNE_NODES,
    )


_OWNER: LiteralString = "x.owner = $owner AND x.environment = $environment"
_PERSONA: LiteralString = "x.agent_id = $agent_id AND x.environment = $environment"
FORGET_OWNER = _forget(_OWNER)
FORGET_PERSONA = _forget(_PERSONA)
FORGET_BOTH = _forget(f"{_OWNER} AND x.agent_id = $agent_id")
_STATEMENT: LiteralString = (
    "x.agent_id = $agent_id AND x.environment = $environment AND x.owner = $owner "
    "AND ($statement IN coalesce(x.statements, []) OR (x.statements IS NULL "
    "AND x.conversation = $conversation AND x.said_at = $said))"
)
_KEPT: LiteralString = "[s IN coalesce(x.statements, []) WHERE s <> $statement]"
FORGET_STATEMENT: tuple[LiteralString, ...] = (
    f"MATCH (:CompanionEntity)-[x:RELATES]->(:CompanionEntity) WHERE {_STATEMENT} "
    f"WITH x, {_KEPT} AS kept WHERE size(kept) = 0 DELETE x RETURN count(x) AS gone",
    f"MATCH (:CompanionEntity)-[x:RELATES]->(:CompanionEntity) WHERE {_STATEMENT} "
    f"SET x.statements = {_KEPT}",
    f"MATCH (x:CompanionMention) WHERE {_STATEMENT} "
    f"WITH x, {_KEPT} AS kept WHERE size(kept) = 0 "
    "OPTIONAL MATCH (n:CompanionEntity)-[r:RELATES]-(:CompanionEntity) "
    "WHERE n.agent_id = x.agent_id AND n.environment = x.environment AND n.key = x.key "
    "AND r.owner = x.owner "
    "WITH x, count(r) AS touching WHERE touching = 0 DELETE x",
    f"MATCH (x:CompanionMention) WHERE {_STATEMENT} SET x.statements = {_KEPT}",
    _PRUNE_NODES,
)
"""Delete a scope's relations, then mentions, that only one statement said (a mention while
no relation of its owner touches its entity); take the statement off the rest.

Deleting comes first and setting apart: FalkorDB drops a ``SET`` made on a row that a later
``WHERE`` of the same statement filters out, and leaves a property set to ``[]`` as it was.
"""
FORGET_RELATION: LiteralString = (
    "MATCH (:CompanionEntity)-[x:RELATES]->(:CompanionEntity) "
    "WHERE x.id = $id AND x.environment = $environment DELETE x RETURN count(x) AS gone"
)
MENTION: LiteralString = (
    "MATCH (x:CompanionMention) WHERE x.id = $id AND x.environment = $environment "
    "RETURN x.agent_id AS agent_id, x.owner AS owner, x.key AS key"
)
FORGET_MENTION: tuple[LiteralString, LiteralString, LiteralString] = (
    "MATCH (n:CompanionEntity)-[x:RELATES]-(:CompanionEntity) WHERE n.agent_id = $agent_id "
    "AND n.environment = $environment AND n.key = $key AND x.owner = $owner "
    "DELETE x RETURN count(x) AS gone",
    "MATCH (x:CompanionMention) WHERE x.id = $id AND x.environment = $environment DELETE x",
    _PRUNE_NODES,
)
_FIELDS: LiteralString = (
    "x.id AS id, x.owner AS owner, x.source AS source, x.said_at AS said_at, x.via AS via, "
    "x.person AS person, x.device AS device, x.conversation AS conversation, "
    "x.statement AS statement"
)
_SCOPES: LiteralString = (
    "x.agent_id = $agent_id AND x.environment = $environment AND x.owner IN $owners"
)
EXPORT_RELATIONS: LiteralString = (
    f"MATCH (:CompanionEntity)-[x:RELATES]->(:CompanionEntity) WHERE {_SCOPES} "
    f"RETURN {_FIELDS}, x.subject AS subject, x.predicate AS predicate, x.object AS object "
    "ORDER BY x.said_at DESC SKIP $offset LIMIT $limit"
)
EXPORT_MENTIONS: LiteralString = (
    f"MATCH (x:CompanionMention) WHERE {_SCOPES} RETURN {_FIELDS}, x.name AS name "
    "ORDER BY x.said_at DESC SKIP $offset LIMIT $limit"
)
COUNT_RELATIONS: LiteralString = (
    f"MATCH (:CompanionEntity)-[x:RELATES]->(:CompanionEntity) WHERE {_SCOPES} "
    "RETURN count(x) AS total"
)
COUNT_MENTIONS: LiteralString = (
    f"MATCH (x:CompanionMention) WHERE {_SCOPES} RETURN count(x) AS total"
)
INDEXES: tuple[tuple[LiteralString, ...], ...] = (
    (
        "CREATE INDEX companion_entity IF NOT EXISTS "
        "FOR (n:CompanionEntity) ON (n.agent_id, n.environment, n.key)",
        "CREATE INDEX FOR (n:CompanionEntity) ON (n.key)",
    ),
    (
        "CREATE INDEX companion_mention IF NOT EXISTS FOR (n:CompanionMention) ON (n.id)",
        "CREATE INDEX FOR (n:CompanionMention) ON (n.id)",
    ),
)


def merge_statements(
    scope: MemoryScope, facts: GraphFacts, *, text_bytes: int | None
) -> list[tuple[LiteralString, Params]]:
    """Return the merge statements for ``facts``: the mentions', then the relations'.

    With ``text_bytes`` (FalkorDB) the relations and the mentions are cut into statements
    whose text stays under that size.
    """
    cleaned = clean_scope(scope)
    said = facts.at or datetime.now(UTC)
    origin = facts.provenance.cleaned().said_at(said)
    fixed: Params = {
        "agent_id": cleaned.agent_id,
        "owner": cleaned.owner,
        "environment": cleaned.environment,
        "at": iso(said),
        "source": clean_text(facts.source, MAX_NAME_CHARS),
        **dump_provenance(origin),
        "statement": origin.statement or UNKNOWN_STATEMENT,
        "max_statements": MAX_STATEMENTS,
    }
    spelled: dict[str, str] = {}
    for raw in [*facts.entities, *(n for r in facts.relations for n in (r.subject, r.object))]:
        name = clean_name(raw)
        if name:
            spelled.setdefault(name_key(name), name)
    relations: dict[tuple[str, str, str], RelationRow] = {}
    for relation in facts.relations:
        subject, obj = clean_name(relation.subject), clean_name(relation.object)
        predicate = clean_name(relation.predicate)
        if subject and predicate and obj:
            key = (name_key(subject), name_key(predicate), name_key(obj))
            relations.setdefault(key, {
                "subject_key": key[0], "predicate_key": key[1], "object_key": key[2],
                "subject": spelled[key[0]], "predicate": predicate, "object": spelled[key[2]],
                "id": graph_id("rel", cleaned, *key),
            })  # fmt: skip
    rows = list(relations.values())
    mentions = [
        {"id": graph_id("ent", cleaned, key), "key": key, "name": name}
        for key, name in spelled.items()
    ]
    if text_bytes is None:
        if not spelled:
            return []
        return [
            (MERGE_MENTIONS, {**fixed, "mentions": mentions, "entities": list(spelled)}),
            (MERGE_RELATIONS, {**fixed, "entities": [], "relations": rows}),
        ]
    budget = text_bytes - _size(fixed)
    statements: list[tuple[LiteralString, Params]] = [
        (MERGE_MENTIONS, {**fixed, "mentions": part, "entities": [m["key"] for m in part]})
        for part in chunks(mentions, (budget - len(MERGE_MENTIONS.encode())) // 2)
    ]
    for part in chunks(rows, (budget - len(MERGE_RELATIONS.encode())) // 2):
        ends = list(
            dict.fromkeys(k for row in part for k in (row["subject_key"], row["object_key"]))
        )
        statements.append((MERGE_RELATIONS, {**fixed, "entities": ends, "relations": part}))
    return statements


def chunks[T](items: list[T], budget: int) -> list[list[T]]:
    """Cut ``items`` into runs whose JSON stays within ``budget`` bytes (drop any too big)."""
    runs: list[list[T]] = []
    current: list[T] = []
    used = 0
    for item in items:
        cost = _size(item) + 2
        if cost > budget:
            LOGGER.warning("A graph fact of %d bytes is too big for FalkorDB; dropped", cost)
            continue
        if current and used + cost > budget:
            runs.append(current)
            current, used = [], 0
        current.append(item)
        used += cost
    if current:
        runs.append(current)
    return runs


def escaped(value: object) -> object:
    """Return ``value`` with every string's backslashes and quotes escaped, recursively."""
    if isinstance(value, str):
        return value.replace("\\", "\\\\").replace("'", "\\'")
    if isinstance(value, list):
        return [escaped(item) for item in value]
    if isinstance(value, Mapping):
        return {key: escaped(item) for key, item in value.items()}
    return value


def _size(value: object) -> int:
    """Return how many bytes ``value`` takes written out (escapes included)."""
    return len(json.dumps(escaped(value), ensure_ascii=False).encode())


def statement_params(statement: str) -> Params:
    """Return the parameters that name a statement (a legacy one by conversation and time)."""
    conversation, said = legacy_parts(statement) or ("", "")
    return {"statement": statement, "conversation": conversation, "said": said}
