"""Memory for an entry: the backend its options name, installed first, and its repair issues.

The engine opens memory (``engine/memory/backends.py``: the embedded SQLite store by
default, mem0 on Qdrant, a Neo4j graph on top of either). mem0 and the Neo4j driver are
installed here on demand, with HA's requirement installer (``async_process_requirements``,
not manifest requirements), before the engine's settings are built. A requirement that
fails to install, or a backend that cannot be reached at setup, raises a repair issue;
turns answer either way (writes wait in the outbox, reads that miss are counted).
"""

from __future__ import annotations

from collections.abc import Mapping
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
    MEMORY_MEM0,
    MEMORY_OUTBOX_FILE,
)
from ..engine.engine import MemoryProblem
from ..engine.memory.backends import EmbeddingSettings, MemoryConfig, Neo4jSettings
from ..engine.redaction import scrub_text
from ..runtime import CompanionConfigEntry


async def async_memory_config(
    hass: HomeAssistant, entry: CompanionConfigEntry
) -> MemoryConfig | None:
    """Return the memory the entry's options name, its requirements installed.

    None when a requirement could not be installed: memory is off, a repair issue says why.
    """
    config = memory_config(entry.options, entry_id=entry.entry_id, data=entry.data)
    try:
        if config.requirements:
            await async_process_requirements(hass, DOMAIN, list(config.requirements))
    except RequirementsNotFound as err:
        _async_issue(hass, entry, ISSUE_MEMORY_REQUIREMENTS, str(err.requirements))
        return None
    return config


@callback
def async_memory_started(
    hass: HomeAssistant, entry: CompanionConfigEntry, problem: MemoryProblem | None
) -> None:
    """Raise or clear the entry's memory issues after the engine opened its memory."""
    if problem is not None:
        _async_issue(hass, entry, ISSUE_MEMORY_UNREACHABLE, problem.detail)
        if not problem.opened:
            return
    else:
        ir.async_delete_issue(hass, DOMAIN, f"{ISSUE_MEMORY_UNREACHABLE}_{entry.entry_id}")
    ir.async_delete_issue(hass, DOMAIN, f"{ISSUE_MEMORY_REQUIREMENTS}_{entry.entry_id}")


def memory_config(
    options: Mapping[str, Any],
    *,
    entry_id: str = "",
    data: Mapping[str, Any] | None = None,
) -> MemoryConfig:
    """Return the memory the options name (the outbox file is the entry's own)."""
    backend = options.get(CONF_MEMORY_BACKEND, MEMORY_EMBEDDED)
    return MemoryConfig(
        backend="mem0" if backend == MEMORY_MEM0 else "embedded",
        embeddings=embedding_settings(options),
        qdrant_url=options.get(CONF_MEM0_URL) or None,
        qdrant_api_key=options.get(CONF_MEM0_API_KEY) or None,
        graph=neo4j_settings(options) if options.get(CONF_MEMORY_GRAPH) else None,
        environment=str((data or {}).get(CONF_MEMORY_ENVIRONMENT, "production")),
        outbox_file=f"{entry_id}.{MEMORY_OUTBOX_FILE}",
    )


def embedding_settings(options: Mapping[str, Any]) -> EmbeddingSettings | None:
    """Return the embeddings endpoint the options name, if any (E5 models told apart)."""
    if not (url := options.get(CONF_EMBEDDINGS_URL)):
        return None
    return EmbeddingSettings.for_model(
        url,
        options.get(CONF_EMBEDDINGS_MODEL) or "text-embedding-3-small",
        api_key=options.get(CONF_EMBEDDINGS_KEY) or None,
    )


def neo4j_settings(options: Mapping[str, Any]) -> Neo4jSettings:
    """Return the Neo4j settings the options name."""
    return Neo4jSettings(
        uri=str(options.get(CONF_NEO4J_URI, "")),
        user=options.get(CONF_NEO4J_USER) or None,
        password=options.get(CONF_NEO4J_PASSWORD) or None,
    )


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
