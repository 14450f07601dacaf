"""The memory options read into engine settings: the embeddings endpoint, mem0, Neo4j.

Setup (``setup``) and the options flow's checks (``memory_flow``) build their backends
from the same options through here, so a check tries exactly what setup will open.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..const import (
    CONF_EMBEDDINGS_KEY,
    CONF_EMBEDDINGS_MODEL,
    CONF_EMBEDDINGS_URL,
    CONF_MEM0_API_KEY,
    CONF_MEM0_URL,
    CONF_NEO4J_PASSWORD,
    CONF_NEO4J_URI,
    CONF_NEO4J_USER,
)
from ..engine.memory.embeddings import EmbeddingSettings, OpenAIEmbedder
from ..engine.memory.mem0.setup import Mem0Settings
from ..engine.memory.neo4j.graph import Neo4jSettings

MEM0_FOLDER = "mem0"


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
