"""The memory options: their form, and what they mean to the engine (a ``MemoryConfig``).

The options flow shows the form (``flows.memory`` checks what it names); setup reads the
same options into the engine's ``MemoryConfig`` (``setup``), so a check tries what setup
will open.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import voluptuous as vol
from homeassistant.helpers.selector import (
    BooleanSelector,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)

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
    MEMORY_BACKENDS,
    MEMORY_EMBEDDED,
    MEMORY_MEM0,
    MEMORY_OUTBOX_FILE,
)
from ..engine.memory.backends import EmbeddingSettings, MemoryConfig, Neo4jSettings

_URL = TextSelector(TextSelectorConfig(type=TextSelectorType.URL))
_SECRET = TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))


def memory_schema() -> vol.Schema:
    """Return the memory form."""
    return vol.Schema(
        {
            vol.Required(CONF_MEMORY_BACKEND, default=MEMORY_EMBEDDED): SelectSelector(
                SelectSelectorConfig(
                    options=list(MEMORY_BACKENDS),
                    translation_key=CONF_MEMORY_BACKEND,
                    mode=SelectSelectorMode.LIST,
                )
            ),
            vol.Optional(CONF_MEM0_URL): _URL,
            vol.Optional(CONF_MEM0_API_KEY): _SECRET,
            vol.Required(CONF_MEMORY_GRAPH, default=False): BooleanSelector(),
            vol.Optional(CONF_NEO4J_URI): str,
            vol.Optional(CONF_NEO4J_USER): str,
            vol.Optional(CONF_NEO4J_PASSWORD): _SECRET,
            vol.Optional(CONF_EMBEDDINGS_URL): _URL,
            vol.Optional(CONF_EMBEDDINGS_MODEL): str,
            vol.Optional(CONF_EMBEDDINGS_KEY): _SECRET,
        }
    )


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
