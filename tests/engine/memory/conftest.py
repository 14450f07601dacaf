"""Fixtures of the memory tests: every backend behind the same ``memory_store`` fixture."""

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.memory.models import GraphStore, MemoryStore
from tests.support.embeddings import embedder
from tests.support.neo4j_server import neo4j_server

from .backends import GRAPH_BACKENDS, MEMORY_BACKENDS, Backend, Fixtures

__all__ = [
    "embedder",
    "neo4j_server",
]


@pytest.fixture(params=sorted(MEMORY_BACKENDS))
def memory_backend(request: pytest.FixtureRequest) -> tuple[Backend[MemoryStore], Fixtures]:
    """Return each memory backend in turn, with the fixtures it needs set up."""
    backend = MEMORY_BACKENDS[request.param]
    return backend, {name: request.getfixturevalue(name) for name in backend.fixtures}


@pytest.fixture(params=sorted(GRAPH_BACKENDS))
def graph_backend(request: pytest.FixtureRequest) -> tuple[Backend[GraphStore], Fixtures]:
    """Return each graph backend in turn, with the fixtures it needs set up."""
    backend = GRAPH_BACKENDS[request.param]
    return backend, {name: request.getfixturevalue(name) for name in backend.fixtures}


@pytest.fixture
async def memory_store(
    memory_backend: tuple[Backend[MemoryStore], Fixtures], tmp_path: Path
) -> AsyncIterator[MemoryStore]:
    """Return a fresh store of each backend in turn (the contract runs once per backend)."""
    backend, fixtures = memory_backend
    async with backend.open(tmp_path, fixtures) as store:
        yield store


@pytest.fixture
async def graph_store(
    graph_backend: tuple[Backend[GraphStore], Fixtures], tmp_path: Path
) -> AsyncIterator[GraphStore]:
    """Return a fresh graph of each backend in turn."""
    backend, fixtures = graph_backend
    async with backend.open(tmp_path, fixtures) as graph:
        yield graph


@pytest.fixture
async def silent_port(socket_enabled: None) -> AsyncIterator[int]:
    """Listen on a loopback port that accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Keep the connection open, say nothing."""
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield int(server.sockets[0].getsockname()[1])
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()
