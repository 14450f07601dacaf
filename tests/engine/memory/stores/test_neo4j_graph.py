"""Neo4jGraph on the real FalkorDB Bolt listener: hostile values, big turns, checks, timeouts."""

import asyncio
import sys
from collections.abc import AsyncIterator

import neo4j
import pytest

from custom_components.companion_agent.engine.memory.models import (
    Forget,
    GraphFacts,
    Relation,
)
from custom_components.companion_agent.engine.memory.stores.neo4j.graph import (
    Neo4jGraph,
    Neo4jSettings,
)
from tests.engine.memory import ANNA, HOME

HOSTILE = (
    "O'Brien",
    "'); MATCH (n) DETACH DELETE n //",
    "back\\slash \\' and \\\\",
    '"quoted" {braces} $param',
    "猫咪 Mimi",
)


@pytest.fixture
async def graph(falkordb: str) -> AsyncIterator[Neo4jGraph]:
    """Return a graph on the session's FalkorDB (emptied for this test)."""
    store = Neo4jGraph(Neo4jSettings(uri=falkordb))
    yield store
    await store.close()


async def test_hostile_values_round_trip_and_run_nothing(graph: Neo4jGraph) -> None:
    """Test that quotes, backslashes and Cypher in names come back exactly, running nothing."""
    await graph.merge(
        HOME, GraphFacts(relations=(Relation(subject="hall", predicate="has", object="lamp"),))
    )
    await graph.merge(
        ANNA,
        GraphFacts(
            relations=tuple(Relation(subject="Anna", predicate=v, object=v) for v in HOSTILE)
        ),
    )
    found = await graph.neighbourhood(ANNA.readable(), ["Anna"], limit=50)
    assert {(r.predicate, r.object) for r in found} == {(v, v) for v in HOSTILE}
    assert await graph.neighbourhood([HOME], ["hall"]) == [
        Relation(subject="hall", predicate="has", object="lamp")
    ], "the household's graph is untouched"


async def test_a_big_turn_is_merged_whole(graph: Neo4jGraph) -> None:
    """Test that a turn of 150 long, non-Latin relations lands in full (FalkorDB: in parts)."""
    relations = tuple(
        Relation(subject="家", predicate="有", object=f"房间{n:03d}" + "很大的房间" * 20)
        for n in range(150)
    )
    await graph.merge(HOME, GraphFacts(relations=relations, source="c1"))
    assert len(await graph.neighbourhood([HOME], ["家"], limit=50)) == 50
    assert await graph.forget(Forget(agent_id="nova")) == 150


async def test_relations_carry_their_scope(graph: Neo4jGraph, falkordb: str) -> None:
    """Test that each stored edge names its persona, owner and environment."""
    await graph.merge(
        ANNA, GraphFacts(relations=(Relation(subject="Anna", predicate="owns", object="Mimi"),))
    )
    async with neo4j.AsyncGraphDatabase.driver(falkordb, auth=None) as driver:
        records, _, _ = await driver.execute_query(
            "MATCH (a)-[r:RELATES]->(b) RETURN r.agent_id AS agent, r.owner AS owner, "
            "r.environment AS environment, a.key AS subject, b.key AS object",
        )
    assert [record.data() for record in records] == [
        {"agent": "nova", "owner": "user:anna", "environment": "production",
         "subject": "anna", "object": "mimi"}
    ]  # fmt: skip


async def test_check_passes_on_a_live_server(graph: Neo4jGraph) -> None:
    """Test that check connects and reports no problem."""
    check = await graph.check()
    assert (check.backend, check.problem, check.detail) == ("neo4j", None, "")


async def test_check_says_cannot_connect_when_nothing_listens(socket_enabled: None) -> None:
    """Test that a closed port is ``cannot_connect``."""
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    graph = Neo4jGraph(Neo4jSettings(uri=f"bolt://127.0.0.1:{port}", timeout=1.0))
    assert (await graph.check()).problem == "cannot_connect"
    await graph.close()


async def test_a_server_that_never_answers_times_out(socket_enabled: None) -> None:
    """Test that a listener that accepts and stays silent ends in ``cannot_connect``."""
    held: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Accept and say nothing."""
        held.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    graph = Neo4jGraph(Neo4jSettings(uri=f"bolt://127.0.0.1:{port}", timeout=0.5))
    try:
        async with asyncio.timeout(10):
            check = await graph.check()
        assert check.problem == "cannot_connect"
    finally:
        await graph.close()
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("uri", ["http://127.0.0.1:7687", "bolt+x://host:7687", "not a uri"])
async def test_check_says_invalid_config_for_a_bad_address(uri: str) -> None:
    """Test that an address the driver cannot take is ``invalid_config``."""
    graph = Neo4jGraph(Neo4jSettings(uri=uri, timeout=1.0))
    assert (await graph.check()).problem == "invalid_config"
    await graph.close()


async def test_check_says_missing_dependency_without_the_driver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Test that without the neo4j package every call is ``missing_dependency``."""
    monkeypatch.setitem(sys.modules, "neo4j", None)
    graph = Neo4jGraph(Neo4jSettings(uri="bolt://127.0.0.1:7687"))
    assert (await graph.check()).problem == "missing_dependency"
