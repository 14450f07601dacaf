"""Memory for an entry: the backend its options name, and each turn's window and hook.

The embedded store (one SQLite file, ``<config>/companion_agent/memory.db``) is the
default, with its own graph; mem0 (on Qdrant: files in ``<config>/companion_agent/mem0/``
or a server) needs an embeddings endpoint; a Neo4j graph can go on top of either. mem0 and
the Neo4j driver are installed on demand (``async_process_requirements``, not manifest
requirements). A backend that cannot be reached at setup, or a requirement that fails to
install, raises a repair issue; turns answer either way (writes wait in the outbox, reads
that miss are counted). Memory is closed, bounded, at unload and HA stop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.requirements import RequirementsNotFound, async_process_requirements

from ..const import (
    CONF_EMBEDDINGS_KEY,
    CONF_EMBEDDINGS_MODEL,
    CONF_EMBEDDINGS_URL,
    CONF_MEM0_API_KEY,
    CONF_MEM0_URL,
    CONF_MEMORY_BACKEND,
    CONF_MEMORY_ENVIRONMENT,
    CONF_MEMORY_GRAPH,
    CONF_NEO4J_PASSWORD,
    CONF_NEO4J_URI,
    CONF_NEO4J_USER,
    DOMAIN,
    ISSUE_MEMORY_REQUIREMENTS,
    ISSUE_MEMORY_UNREACHABLE,
    LOGGER,
    MEMORY_EMBEDDED,
    MEMORY_FILE,
    MEMORY_MEM0,
    MEMORY_OUTBOX_FILE,
    MEMORY_WINDOWS_FOLDER,
)
from ..engine.errors import CompanionError, MemoryBackendError, MemoryStoreError
from ..engine.llm import OpenAIChatModel
from ..engine.memory.answers import JsonAnswers
from ..engine.memory.companion import CompanionMemory, MemorySettings
from ..engine.memory.embeddings import EmbeddingSettings, OpenAIEmbedder
from ..engine.memory.hook import MemoryHook
from ..engine.memory.mem0.setup import MEM0_REQUIREMENTS, Mem0Settings
from ..engine.memory.mem0.store import Mem0Store
from ..engine.memory.neo4j.graph import NEO4J_REQUIREMENT, Neo4jGraph, Neo4jSettings
from ..engine.memory.outbox import MemoryOutbox
from ..engine.memory.sqlite.store import EmbeddedStore
from ..engine.memory.types import GraphStore, MemoryStore
from ..engine.memory.window import RecentWindow
from ..engine.plugins import Hook, Profile
from ..engine.redaction import scrub_text
from ..repairs import async_report_bad_memory_file
from ..runtime import CompanionConfigEntry

MEMORY_CLOSE_GRACE = 5.0
MEM0_FOLDER = "mem0"
MEMORY_MODEL_TIMEOUT = 30.0


async def async_setup_memory(hass: HomeAssistant, entry: CompanionConfigEntry) -> None:
    """Open the entry's memory; a backend that fails raises a repair issue, never setup."""
    runtime = entry.runtime_data
    options = entry.options
    data_dir = runtime.data_dir
    try:
        store, graph = await _async_open_backend(
            hass, options, data_dir, partial(async_report_bad_memory_file, hass)
        )
    except RequirementsNotFound as err:
        _async_issue(hass, entry, ISSUE_MEMORY_REQUIREMENTS, str(err.requirements))
        return
    except (CompanionError, OSError) as err:
        _async_issue(hass, entry, ISSUE_MEMORY_UNREACHABLE, str(err))
        return
    answers: dict[str, JsonAnswers] = {}

    def answers_for(name: str | None) -> JsonAnswers:
        """Return the extractor of one memory model (the entry's model when None)."""
        model_name = name or runtime.model.settings.model
        if model_name not in answers:
            settings = replace(
                runtime.model.settings,
                model=model_name,
                first_token_timeout=MEMORY_MODEL_TIMEOUT,
                chunk_timeout=MEMORY_MODEL_TIMEOUT,
                max_retries=0,  # the outbox retries, with backoff
            )
            model = OpenAIChatModel(settings, http_client=runtime.host.http)
            answers[model_name] = JsonAnswers(model)
        return answers[model_name]

    memory = CompanionMemory(
        store,
        MemoryOutbox(
            data_dir / f"{entry.entry_id}.{MEMORY_OUTBOX_FILE}",
            on_corrupt=partial(async_report_bad_memory_file, hass),
        ),
        windows=data_dir / MEMORY_WINDOWS_FOLDER,
        answers_for=answers_for,
        graph=graph,
        settings=MemorySettings(
            environment=str(entry.data.get(CONF_MEMORY_ENVIRONMENT, "production")),
            window_tokens=runtime.runner.limits.history_tokens,
        ),
    )
    runtime.memory = memory
    memory.start()
    if problem := await _async_unreachable(memory):
        _async_issue(hass, entry, ISSUE_MEMORY_UNREACHABLE, problem)
    else:
        ir.async_delete_issue(hass, DOMAIN, f"{ISSUE_MEMORY_UNREACHABLE}_{entry.entry_id}")
    ir.async_delete_issue(hass, DOMAIN, f"{ISSUE_MEMORY_REQUIREMENTS}_{entry.entry_id}")


async def async_close_memory(entry: CompanionConfigEntry) -> None:
    """Let the outbox drain a little, write the windows, close the store (bounded)."""
    memory = entry.runtime_data.memory
    if memory is None:
        return
    entry.runtime_data.memory = None
    await memory.close(MEMORY_CLOSE_GRACE)


def turn_memory(
    entry: CompanionConfigEntry,
    persona_id: str,
    user_id: str | None,
    profile: Profile,
    *,
    follows_up: bool = False,
) -> tuple[RecentWindow | None, tuple[Hook, ...]]:
    """Return one turn's rolling window and memory hook (nothing when memory is off).

    A turn that ``follows_up`` a conversation the home started keeps that conversation's
    history instead of the window.
    """
    memory = entry.runtime_data.memory
    if memory is None:
        return None, ()
    scope = memory.scope(persona_id, user_id)
    model = profile.models.memory
    window = None if follows_up else memory.window(scope, model)
    return window, (MemoryHook(memory, scope, model),)


async def _async_open_backend(
    hass: HomeAssistant,
    options: Mapping[str, Any],
    data_dir: Path,
    on_corrupt: Callable[[Path, Path], None],
) -> tuple[MemoryStore, GraphStore | None]:
    """Open the store (and graph) the options name; install what they need first."""
    backend = options.get(CONF_MEMORY_BACKEND, MEMORY_EMBEDDED)
    graph: GraphStore | None = None
    if options.get(CONF_MEMORY_GRAPH):
        await async_process_requirements(hass, DOMAIN, [NEO4J_REQUIREMENT])
        graph = Neo4jGraph(neo4j_settings(options))
    embedder = embedder_for(options)
    if backend == MEMORY_MEM0:
        if embedder is None:
            raise MemoryBackendError(
                "it needs an embeddings endpoint", backend=MEMORY_MEM0, problem="invalid_config"
            )
        await async_process_requirements(hass, DOMAIN, list(MEM0_REQUIREMENTS))
        settings = mem0_settings(options, data_dir)
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


def embedder_for(options: Mapping[str, Any]) -> OpenAIEmbedder | None:
    """Return the embeddings endpoint the options name, if any (E5 models told apart)."""
    if not (url := options.get(CONF_EMBEDDINGS_URL)):
        return None
    return OpenAIEmbedder(
        EmbeddingSettings.for_model(
            url,
            options.get(CONF_EMBEDDINGS_MODEL) or "text-embedding-3-small",
            api_key=options.get(CONF_EMBEDDINGS_KEY) or None,
        )
    )


def mem0_settings(options: Mapping[str, Any], data_dir: Path) -> Mem0Settings:
    """Return mem0's settings: Qdrant on a server the options name, else in files."""
    return Mem0Settings(
        folder=data_dir / MEM0_FOLDER,
        qdrant_url=options.get(CONF_MEM0_URL) or None,
        qdrant_api_key=options.get(CONF_MEM0_API_KEY) or None,
    )


def neo4j_settings(options: Mapping[str, Any]) -> Neo4jSettings:
    """Return the Neo4j settings the options name."""
    return Neo4jSettings(
        uri=str(options.get(CONF_NEO4J_URI, "")),
        user=options.get(CONF_NEO4J_USER) or None,
        password=options.get(CONF_NEO4J_PASSWORD) or None,
    )


async def _async_unreachable(memory: CompanionMemory) -> str | None:
    """Say what does not answer at setup (the store, the graph), or None when all do."""
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


@callback
def _async_issue(hass: HomeAssistant, entry: CompanionConfigEntry, kind: str, detail: str) -> None:
    """Raise the entry's memory issue of ``kind`` (marked with the entry, for cleanup)."""
    detail = scrub_text(detail)  # a backend's error may name a URL with its credentials
    LOGGER.warning("Memory is not available: %s", detail)
    ir.async_create_issue(
        hass,
        DOMAIN,
        f"{kind}_{entry.entry_id}",
        is_fixable=False,
        severity=ir.IssueSeverity.ERROR,
        translation_key=kind,
        translation_placeholders={
            "backend": str(entry.options.get(CONF_MEMORY_BACKEND, MEMORY_EMBEDDED)),
            "detail": detail[:200],
        },
        data={"entry_id": entry.entry_id},
    )
