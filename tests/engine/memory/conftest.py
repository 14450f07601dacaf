"""Fixtures of the memory tests: every backend behind one ``memory_store`` fixture; memory.

``memory`` is a started ``CompanionMemory`` on the embedded ``store``, with its outbox and
exchanges on disk, for the tests of the tiers, the outbox and forget.
"""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.memory.answers import JsonAnswers
from custom_components.companion_agent.engine.memory.companion import (
    CompanionMemory,
    MemorySettings,
)
from custom_components.companion_agent.engine.memory.models import GraphStore, MemoryStore
from custom_components.companion_agent.engine.memory.outbox.outbox import OUTBOX_RETRY, MemoryOutbox
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from tests.support.embeddings import embedder
from tests.support.exchanges import open_exchanges
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


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    """Return the embedded store (a real SQLite file) memory tests write to."""
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    yield store
    await store.close()


QUICK_RETRY = replace(OUTBOX_RETRY, first_delay=0.01, max_delay=0.05)


async def make_memory(
    tmp_path: Path, store: MemoryStore, model: OpenAIChatModel, graph: GraphStore | None = None
) -> CompanionMemory:
    """Return started memory on ``store`` with its outbox and exchanges under ``tmp_path``."""
    answers = JsonAnswers(model, timeout=5)
    memory = CompanionMemory(
        store,
        MemoryOutbox(tmp_path / "outbox.db", retry=QUICK_RETRY),
        exchanges=open_exchanges(tmp_path / "exchanges.db"),
        answers_for=lambda _name: answers,
        graph=graph,
        settings=MemorySettings(environment="test", window_tokens=400),
    )
    await memory.start()
    return memory


@pytest.fixture
async def memory(
    tmp_path: Path, store: EmbeddedStore, chat_model: OpenAIChatModel
) -> AsyncIterator[CompanionMemory]:
    """Return memory on ``store`` with its outbox and exchanges under ``tmp_path``."""
    memory = await make_memory(tmp_path, store, chat_model, store.graph)
    yield memory
    await memory.close(grace=1.0)
    await memory.exchanges.close()
