"""The knowledge graph on Neo4j (or another Bolt server) through the official async driver.

**Model.** An entity is a ``:CompanionEntity`` node per persona and environment, keyed by
its normalised name (``inputs.name_key``: "Ann", "ann " and "ＡＮＮ" are one). A
relation is a ``:RELATES`` edge that belongs to one scope: it carries ``agent_id``,
``owner`` and ``environment``, the predicate, and the spellings first said. A walk follows
only edges of the scopes a turn may read, so a person's and the household's graphs join
at a shared name (as in the embedded graph) while nobody else's edge is ever crossed. Nodes
carry no spelling, only the key, so forgetting a person leaves no name of theirs behind.

**Cypher.** Every value is a parameter; the query texts are constants (the hop bound of a
variable-length path cannot be a parameter, so there is one text per bound). One turn's
facts are two statements (mentions, relations) in one write transaction. The same texts
run on Neo4j 5 and on FalkorDB's Bolt listener (see ``docs/memory-backends.md`` for
FalkorDB's differences; its string parameters need escaping, detected once per driver by a
probe).

**Ids and provenance.** A relation keeps its id, when it was last said and who said it; who
mentioned an entity is a ``:CompanionMention`` per owner (``cypher``): export lists them,
forget deletes a scope's (said at or before its time), one by id, or what one statement
alone said (both keep the statements that said them). Reaching the server is ``bolt``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import product
from typing import TYPE_CHECKING, LiteralString

from ...models import (
    MAX_PAGE,
    BackendCheck,
    Forget,
    GraphFacts,
    GraphItem,
    GraphPage,
    MemoryScope,
    Relation,
    page_bounds,
)
from ...provenance import load_provenance
from ..inputs import MAX_NAME_CHARS, BoundedGraph, clean_scope
from ..sqlite.deletes_sql import forget_where
from ..sqlite.records_sql import iso
from . import cypher
from .bolt import BACKEND, NEO4J_REQUIREMENT, BoltConnection, Neo4jSettings
from .cypher import Params

if TYPE_CHECKING:
    from neo4j import AsyncManagedTransaction, Record

__all__ = ["BACKEND", "NEO4J_REQUIREMENT", "Neo4jGraph", "Neo4jSettings"]

LOGGER = logging.getLogger(__name__)


class Neo4jGraph(BoundedGraph):
    """``GraphStore`` on a Bolt server; one driver (a connection pool) per instance."""

    def __init__(self, settings: Neo4jSettings) -> None:
        """Keep the settings; the driver is made on first use."""
        self.settings = settings
        self._bolt = BoltConnection(settings)
        self._outgoing = self._bolt.outgoing
        self._incoming = self._bolt.incoming

    async def check(self) -> BackendCheck:
        """Connect and log in once; say what failed, if anything."""
        return await self._bolt.check()

    async def _merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge in one write transaction (FalkorDB: statements within its size bound)."""
        await self._bolt.driver()  # first: it learns the server's dialect
        statements = cypher.merge_statements(scope, facts, text_bytes=self._bolt.text_bytes)
        if not statements:
            return

        async def work(tx: AsyncManagedTransaction) -> None:
            """Run the merge statements."""
            for query, params in statements:
                await (await tx.run(query, self._outgoing(params))).consume()

        await self._bolt.run(work, write=True)

    async def _walk(
        self, scopes: list[MemoryScope], keys: list[str], hops: int, limit: int
    ) -> list[Relation]:
        """Walk each persona's and environment's graph; merge the walks, nearest first."""
        groups = _owners_by_space(scopes)
        query = cypher.WALKS[hops]
        await self._bolt.driver()  # first: it learns the server's dialect
        text_bytes = self._bolt.text_bytes
        if text_bytes is None:
            key_runs = [keys]
        else:
            budget = text_bytes - len(query.encode()) - 2 * MAX_NAME_CHARS * len(scopes)
            key_runs = cypher.chunks(keys, budget)

        async def work(tx: AsyncManagedTransaction) -> list[tuple[int, str, Relation]]:
            """Walk each persona's and environment's graph."""
            rows: list[tuple[int, str, Relation]] = []
            for ((agent_id, environment), owners), run in product(groups.items(), key_runs):
                params: Params = {"agent_id": agent_id, "environment": environment,
                                  "owners": owners, "keys": run, "max_paths": cypher.MAX_PATHS,
                                  "limit": limit}  # fmt: skip
                result = await tx.run(query, self._outgoing(params))
                async for record in result:
                    relation = Relation(
                        subject=self._incoming(record["subject"]),
                        predicate=self._incoming(record["predicate"]),
                        object=self._incoming(record["object"]),
                    )
                    rows.append((int(record["distance"]), str(record["updated"]), relation))
            return rows

        rows = await self._bolt.run(work, write=False)
        rows.sort(key=lambda row: row[1], reverse=True)
        rows.sort(key=lambda row: row[0])
        return list(dict.fromkeys(relation for _, _, relation in rows))[:limit]

    async def forget(self, what: Forget) -> int:
        """Delete a scope's graph said at or before ``what.at``, one entity or relation, or
        what one statement said (what another statement also said stays).

        Return how many relations went.
        """
        forget_where(what)
        params: Params = {"environment": what.environment, "at": iso(what.moment)}
        if what.record_id is not None:
            if not what.record_id.startswith(("rel-", "ent-")):
                return 0
            params["id"] = what.record_id
        statements: Sequence[LiteralString]
        if what.record_id is not None and what.record_id.startswith("rel-"):
            statements = (cypher.FORGET_RELATION,)
        elif what.record_id is not None:
            statements = cypher.FORGET_MENTION
        elif what.statement is not None:
            params.update(agent_id=what.agent_id, owner=what.owner)
            params.update(cypher.statement_params(what.statement))
            statements = cypher.FORGET_STATEMENT
        elif what.owner is not None:
            params["owner"] = what.owner
            statements = cypher.FORGET_OWNER
            if what.agent_id is not None:
                params["agent_id"] = what.agent_id
                statements = cypher.FORGET_BOTH
        else:
            params["agent_id"] = what.agent_id
            statements = cypher.FORGET_PERSONA

        async def work(tx: AsyncManagedTransaction) -> int:
            """Delete the relations (counted), then what is left of the scope's entities."""
            if statements is cypher.FORGET_MENTION:
                found = await (await tx.run(cypher.MENTION, self._outgoing(params))).single()
                if found is None:
                    return 0
                params.update(
                    agent_id=self._incoming(found["agent_id"]),
                    owner=self._incoming(found["owner"]),
                    key=self._incoming(found["key"]),
                )
            first, *rest = statements
            record = await (await tx.run(first, self._outgoing(params))).single()
            for statement in rest:
                await (await tx.run(statement, self._outgoing(params))).consume()
            return 0 if record is None else int(record["gone"])

        return await self._bolt.run(work, write=True)

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = MAX_PAGE
    ) -> GraphPage:
        """Return a page of the mentioned entities and the relations of ``scopes``, newest first.

        Each persona and environment is read apart; the page is cut from their union.
        """
        first, size = page_bounds(offset, limit)
        groups = _owners_by_space(scopes)

        async def work(tx: AsyncManagedTransaction) -> GraphPage:
            """Read each group's page and totals."""
            entities: list[GraphItem] = []
            relations: list[GraphItem] = []
            totals = [0, 0]
            for (agent_id, environment), owners in groups.items():
                params: Params = {"agent_id": agent_id, "environment": environment,
                                  "owners": owners, "offset": 0, "limit": first + size}  # fmt: skip
                space = (agent_id, environment)
                async for row in await tx.run(cypher.EXPORT_MENTIONS, self._outgoing(params)):
                    entities.append(self._item(space, row, name=self._incoming(row["name"])))
                async for row in await tx.run(cypher.EXPORT_RELATIONS, self._outgoing(params)):
                    relations.append(self._item(space, row, relation=self._relation(row)))
                for index, query in enumerate((cypher.COUNT_MENTIONS, cypher.COUNT_RELATIONS)):
                    counted = await (await tx.run(query, self._outgoing(params))).single()
                    totals[index] += 0 if counted is None else int(counted["total"])
            newest = lambda item: item.at or datetime.min.replace(tzinfo=UTC)  # noqa: E731
            entities.sort(key=newest, reverse=True)
            relations.sort(key=newest, reverse=True)
            return GraphPage(
                entities=tuple(entities[first : first + size]),
                relations=tuple(relations[first : first + size]),
                total_entities=totals[0],
                total_relations=totals[1],
            )

        return await self._bolt.run(work, write=False)

    async def close(self) -> None:
        """Close the driver's connections."""
        await self._bolt.close()

    def _relation(self, row: Record) -> Relation:
        """Return the relation of an exported row."""
        return Relation(
            subject=self._incoming(row["subject"]),
            predicate=self._incoming(row["predicate"]),
            object=self._incoming(row["object"]),
        )

    def _item(
        self,
        space: tuple[str, str],
        row: Record,
        *,
        name: str = "",
        relation: Relation | None = None,
    ) -> GraphItem:
        """Return an exported entity or relation of one persona and environment."""
        said = self._incoming(row["said_at"])
        return GraphItem(
            id=self._incoming(row["id"]),
            scope=MemoryScope(
                agent_id=space[0], environment=space[1], owner=self._incoming(row["owner"])
            ),
            name=name,
            relation=relation,
            source=self._incoming(row["source"]),
            at=datetime.fromisoformat(said) if said else None,
            provenance=load_provenance(
                {key: row[key] for key in ("via", "person", "device", "conversation", "statement")}
            ),
        )


def _owners_by_space(scopes: Sequence[MemoryScope]) -> dict[tuple[str, str], list[str]]:
    """Group the scopes' owners by persona and environment (one walk per group)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for scope in scopes:
        cleaned = clean_scope(scope)
        owners = groups.setdefault((cleaned.agent_id, cleaned.environment), [])
        if cleaned.owner not in owners:
            owners.append(cleaned.owner)
    return groups
