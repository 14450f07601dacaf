"""A real Neo4j for the graph tests, when ``NEO4J_URI`` (and NEO4J_USER, NEO4J_PASSWORD) is set.

Nothing installs Neo4j here; a developer with one points the tests at it. The tests delete
every ``:CompanionEntity`` node of that database before each test: use a throwaway one.
"""

import os

import pytest

from custom_components.companion_agent.engine.memory.stores.neo4j.graph import Neo4jSettings

NEO4J_URI = os.environ.get("NEO4J_URI", "")


def neo4j_settings() -> Neo4jSettings:
    """Return the settings ``NEO4J_*`` name (a user and password only when given)."""
    return Neo4jSettings(
        uri=NEO4J_URI,
        user=os.environ.get("NEO4J_USER") or None,
        password=os.environ.get("NEO4J_PASSWORD") or None,
        database=os.environ.get("NEO4J_DATABASE") or None,
        timeout=10.0,
    )


@pytest.fixture
async def neo4j_server(socket_enabled: None) -> Neo4jSettings:
    """Return the real Neo4j's settings with its companion graph emptied (skip when unset)."""
    if not NEO4J_URI:
        pytest.skip("NEO4J_URI is not set")
    import neo4j

    settings = neo4j_settings()
    auth = None if settings.user is None else (settings.user, settings.password or "")
    async with neo4j.AsyncGraphDatabase.driver(settings.uri, auth=auth) as driver:
        await driver.execute_query(
            "MATCH (n:CompanionEntity) DETACH DELETE n", database_=settings.database
        )
    return settings
