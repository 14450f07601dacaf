"""Which memory backend a host's settings name: opening it, checking it, and what it needs.

The embedded store (one SQLite file in the data folder, ``memory.db``) is the default, with
its own graph; mem0 (on Qdrant: files under ``mem0/`` or a server) needs an embeddings
endpoint; a Neo4j graph can go on top of either. mem0 and the Neo4j driver are not the
engine's requirements: ``MemoryConfig.requirements`` names what the host must install first.
A mem0 that does not answer yet at start still opens: writes wait in the outbox meanwhile.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import httpx

from ..errors import CorruptionReporter, MemoryBackendError, MemoryStoreError
from ..llm import LLMSettings, OpenAIChatModel
from ..llm.roles import BackgroundModels
from ..retry import NO_RETRY
from ..turn.exchanges import ExchangeStore
from .answers import JsonAnswers
from .companion import CompanionMemory, MemorySettings
from .embeddings import EmbeddingSettings, OpenAIEmbedder
from .models import BackendCheck, GraphStore, MemoryStore
from .outbox.outbox import MemoryOutbox
from .stores.mem0.setup import MEM0_REQUIREMENTS, Mem0Settings
from .stores.mem0.store import Mem0Store
from .stores.neo4j.graph import NEO4J_REQUIREMENT, Neo4jGraph, Neo4jSettings
from .stores.sqlite.store import EmbeddedStore

LOGGER = logging.getLogger(__name__)

MEMORY_FILE = "memory.db"
MEM0_FOLDER = "mem0"
MODEL_TIMEOUT = 30.0
MAX_MODELS = 64

type BackendName = Literal["embedded", "mem0"]

__all__ = [
    "MEM0_REQUIREMENTS",
    "MEMORY_FILE",
    "NEO4J_REQUIREMENT",
    "BackendCheck",
    "BackendName",
    "EmbeddingSettings",
    "MemoryConfig",
    "MemoryProblem",
    "Neo4jSettings",
    "check_embeddings",
    "check_graph",
    "check_mem0",
    "open_backend",
    "open_memory",
    "unreachable",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryConfig:
    """What memory a host wants: the backend, its embeddings, a graph, its files' names."""

    backend: BackendName = "embedded"
    embeddings: EmbeddingSettings | None = None
    qdrant_url: str | None = None
    """mem0's Qdrant server; None keeps Qdrant in files in the data folder."""
    qdrant_api_key: str | None = None
    graph: Neo4jSettings | None = None
    """A Neo4j graph on top of the store; None: the embedded store's own graph, or none."""
    environment: str = "production"
    outbox_file: str = "memory_outbox.db"
    """The durable outbox's file in the data folder: one per host sharing the folder."""

    @property
    def requirements(self) -> tuple[str, ...]:
        """Return what the host must install before memory opens (mem0, the Neo4j driver).

        mem0 without embeddings cannot open (``open_backend`` says so): nothing to install.
        """
        wants_mem0 = self.backend == "mem0" and self.embeddings is not None
        mem0 = MEM0_REQUIREMENTS if wants_mem0 else ()
        graph = (NEO4J_REQUIREMENT,) if self.graph is not None else ()
        return (*graph, *mem0)

    def mem0_settings(self, data_dir: Path) -> Mem0Settings:
        """Return mem0's settings: Qdrant on the server named, else in files."""
        return Mem0Settings(
            folder=data_dir / MEM0_FOLDER,
            qdrant_url=self.qdrant_url,
            qdrant_api_key=self.qdrant_api_key,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryProblem:
    """Memory did not answer at start: what did not; ``opened`` False: memory is off."""

    detail: str
    opened: bool


async def open_backend(
    config: MemoryConfig, data_dir: Path, on_corrupt: CorruptionReporter | None
) -> tuple[MemoryStore, GraphStore | None]:
    """Open the store (and graph) ``config`` names; raise what stops it from opening."""
    graph: GraphStore | None = None if config.graph is None else Neo4jGraph(config.graph)
    embedder = None if config.embeddings is None else OpenAIEmbedder(config.embeddings)
    if config.backend == "mem0":
        if embedder is None:
            raise MemoryBackendError(
                "it needs an embeddings endpoint", backend="mem0", problem="invalid_config"
            )
        settings = config.mem0_settings(data_dir)
        try:
            mem0 = await Mem0Store.create(settings, embedder)
        except MemoryStoreError as err:
            if not err.retryable:
                raise
            LOGGER.warning("mem0 is not reachable yet (%s); it opens when it answers", err)
            mem0 = Mem0Store(settings, embedder)  # writes wait in the outbox meanwhile
        return mem0, graph
    store = await EmbeddedStore.create(
        data_dir / MEMORY_FILE, embedder=embedder, on_corrupt=on_corrupt
    )
    return store, graph or store.graph


async def open_memory(
    config: MemoryConfig,
    data_dir: Path,
    *,
    model: LLMSettings,
    http: httpx.AsyncClient,
    window_tokens: int,
    exchanges: ExchangeStore,
    on_corrupt: CorruptionReporter | None = None,
    roles: BackgroundModels | None = None,
) -> CompanionMemory:
    """Open ``config``'s memory (not started): its store, outbox, extractors; windows on
    ``exchanges``.

    Extraction and summaries use the models ``roles`` binds to the key a turn gives
    (``BackgroundModels``: a persona's memory and summary roles; else ``model``'s server with
    the model the key names, or ``model`` itself), without retries: the outbox retries,
    with backoff.
    """
    store, graph = await open_backend(config, data_dir, on_corrupt)
    background = roles or BackgroundModels(model)
    answers: OrderedDict[LLMSettings, JsonAnswers] = OrderedDict()

    def asked(settings: LLMSettings) -> JsonAnswers:
        """Return the JSON answers of one model (built once, the last 64 kept)."""
        settings = replace(settings, chunk_timeout=MODEL_TIMEOUT, retry=NO_RETRY)
        found = answers.pop(settings, None) or JsonAnswers(
            OpenAIChatModel(settings, http_client=http)
        )
        answers[settings] = found
        while len(answers) > MAX_MODELS:
            answers.popitem(last=False)
        return found

    return CompanionMemory(
        store,
        MemoryOutbox(data_dir / config.outbox_file, on_corrupt=on_corrupt),
        exchanges=exchanges,
        answers_for=lambda key: asked(background.settings(key, "memory")),
        summaries_for=lambda key: asked(background.settings(key, "summary")),
        graph=graph,
        settings=MemorySettings(environment=config.environment, window_tokens=window_tokens),
    )


async def check_mem0(config: MemoryConfig, data_dir: Path) -> BackendCheck:
    """Check that mem0 (and its Qdrant) answers with ``config``'s embeddings, then let go."""
    if config.embeddings is None:
        return BackendCheck(backend="mem0", problem="invalid_config", detail="no embeddings")
    embedder = OpenAIEmbedder(config.embeddings)
    store = Mem0Store(config.mem0_settings(data_dir), embedder)
    try:
        return await store.check()
    finally:
        await store.close()
        await embedder.aclose()


async def check_graph(settings: Neo4jSettings) -> BackendCheck:
    """Log in to the Neo4j server once, then let go."""
    graph = Neo4jGraph(settings)
    try:
        return await graph.check()
    finally:
        await graph.close()


async def check_embeddings(settings: EmbeddingSettings) -> BackendCheck:
    """Embed one short text as memory would (same client, same checks), then let go."""
    embedder = OpenAIEmbedder(settings)
    try:
        await embedder.embed(["check"], "passage")
    except MemoryStoreError as err:
        return BackendCheck(
            backend="embeddings",
            problem="cannot_connect" if err.retryable else "failed",
            detail=str(err),
        )
    finally:
        await embedder.aclose()
    return BackendCheck(backend="embeddings")


async def unreachable(memory: CompanionMemory) -> str | None:
    """Say what does not answer (the store, the graph), or None when all do."""
    try:
        await memory.store.count()
    except Exception as err:  # any failure of a backend is reported, never raised
        return f"{type(err).__name__}: {err}"
    if isinstance(memory.store, Mem0Store):
        check = await memory.store.check()
        if not check.ok:
            return f"{check.backend}: {check.problem}"
    if isinstance(memory.graph, Neo4jGraph):
        check = await memory.graph.check()
        if not check.ok:
            return f"{check.backend}: {check.problem}"
    return None
