"""The Cypher the Neo4j graph runs, and the parameters it sends (made fit for FalkorDB).

Every query text is a constant; every value is a parameter. The same texts run on Neo4j 5
and on FalkorDB 4.16's Bolt listener, which differs in three ways that matter here:

- it writes string parameters into the query text between single quotes, unescaped, so a
  quote ends the string (a value could inject Cypher) and a backslash is read as an
  escape: ``escaped`` escapes both, and the values then arrive exactly as sent;
- the query text with its parameters must stay under about 4 KB, or the server crashes:
  ``chunks`` cuts long lists into statements below ``FALKORDB_TEXT_BYTES``;
- ``CREATE INDEX … IF NOT EXISTS`` is refused (``INDEXES`` tries FalkorDB's form next).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import LiteralString

from ...chars import clean_text
from ..graph_names import MAX_HOPS, MAX_NAME_CHARS, clean_name, name_key
from ..inputs import clean_scope
from ..sqlite.records_sql import iso
from ..types import GraphFacts, MemoryScope

LOGGER = logging.getLogger(__name__)

MAX_PATHS = 1000
FALKORDB_TEXT_BYTES = 3500
PROBE = "a\\\\b"
"""A value Neo4j returns as sent and FalkorDB, reading escapes, returns shorter."""

type Params = dict[str, object]
type RelationRow = dict[str, str]

MERGE: LiteralString = """
UNWIND $entities AS entity
MERGE (n:CompanionEntity {agent_id: $agent_id, environment: $environment, key: entity})
ON CREATE SET n.created_at = $at
WITH count(n) AS merged
UNWIND $relations AS rel
MATCH (a:CompanionEntity {agent_id: $agent_id, environment: $environment, key: rel.subject_key})
MATCH (b:CompanionEntity {agent_id: $agent_id, environment: $environment, key: rel.object_key})
MERGE (a)-[r:RELATES {owner: $owner, predicate_key: rel.predicate_key}]->(b)
ON CREATE SET r.agent_id = $agent_id, r.environment = $environment, r.subject = rel.subject,
  r.predicate = rel.predicate, r.object = rel.object, r.created_at = $at
SET r.updated_at = $at, r.source = $source
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
FORGET_OWNER: tuple[LiteralString, LiteralString] = (
    "MATCH (:CompanionEntity)-[r:RELATES]->(:CompanionEntity) "
    "WHERE r.owner = $owner AND r.environment = $environment DELETE r RETURN count(r) AS gone",
    "MATCH (n:CompanionEntity) WHERE n.environment = $environment AND NOT (n)--() DELETE n",
)
FORGET_PERSONA: tuple[LiteralString, LiteralString] = (
    "MATCH (:CompanionEntity)-[r:RELATES]->(:CompanionEntity) "
    "WHERE r.agent_id = $agent_id AND r.environment = $environment "
    "DELETE r RETURN count(r) AS gone",
    "MATCH (n:CompanionEntity) WHERE n.agent_id = $agent_id AND n.environment = $environment "
    "DETACH DELETE n",
)
INDEXES: tuple[LiteralString, ...] = (
    "CREATE INDEX companion_entity IF NOT EXISTS "
    "FOR (n:CompanionEntity) ON (n.agent_id, n.environment, n.key)",
    "CREATE INDEX FOR (n:CompanionEntity) ON (n.key)",
)


def merge_statements(
    scope: MemoryScope, facts: GraphFacts, *, text_bytes: int | None
) -> list[Params]:
    """Return the parameters of the merge statements for ``facts`` (one, unless cut).

    With ``text_bytes`` (FalkorDB) the relations and the entities that stand alone are cut
    into statements whose text stays under that size.
    """
    cleaned = clean_scope(scope)
    fixed: Params = {
        "agent_id": cleaned.agent_id,
        "owner": cleaned.owner,
        "environment": cleaned.environment,
        "at": iso(facts.at or datetime.now(UTC)),
        "source": clean_text(facts.source, MAX_NAME_CHARS),
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
            })  # fmt: skip
    rows = list(relations.values())
    if text_bytes is None:
        if not spelled:
            return []
        return [{**fixed, "entities": list(spelled), "relations": rows}]
    budget = text_bytes - len(MERGE.encode()) - _size(fixed)
    linked = {key for row in rows for key in (row["subject_key"], row["object_key"])}
    alone = [key for key in spelled if key not in linked]
    statements: list[Params] = [
        {**fixed, "entities": part, "relations": []} for part in chunks(alone, budget)
    ]
    for part in chunks(rows, budget // 2):
        ends = list(
            dict.fromkeys(k for row in part for k in (row["subject_key"], row["object_key"]))
        )
        statements.append({**fixed, "entities": ends, "relations": part})
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
