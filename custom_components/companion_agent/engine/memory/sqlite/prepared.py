"""Vectors and rows at the store's boundary: a memory made ready to insert, a query's vector."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, replace

from ...errors import EmbeddingError
from ..embeddings import Embedder
from ..inputs import CheckedMemory
from ..keywords import segment
from .vectors import pack

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedMemory(CheckedMemory):
    """A memory checked and cut at the boundary, with its row id, terms and vector."""

    id: str
    terms: str
    vector: bytes | None = None
    vector_model: str | None = None


def prepare(checked: CheckedMemory) -> PreparedMemory:
    """Return a checked memory with a new row id and its text segmented for FTS5."""
    return PreparedMemory(
        id=uuid.uuid4().hex,
        terms=segment(checked.text),
        scope=checked.scope,
        text=checked.text,
        kind=checked.kind,
        topic=checked.topic,
        topic_key=checked.topic_key,
        source=checked.source,
        at=checked.at,
    )


async def with_vectors(
    prepared: list[PreparedMemory], embedder: Embedder | None
) -> list[PreparedMemory]:
    """Return ``prepared`` with passage vectors, or as they are when embedding fails."""
    if embedder is None:
        return prepared
    try:
        vectors = await embedder.embed([m.text for m in prepared], "passage")
    except EmbeddingError as err:
        LOGGER.warning("Memories stored without vectors: %s", err)
        return prepared
    model = embedder.model_id
    return [
        replace(m, vector=pack(v), vector_model=model)
        for m, v in zip(prepared, vectors, strict=True)
    ]


async def query_vector(embedder: Embedder, text: str, seconds: float) -> bytes | None:
    """Return a query's packed vector, or None when embedding fails or takes ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            (vector,) = await embedder.embed([text], "query")
    except TimeoutError:
        LOGGER.warning("Memory search goes on without vectors: embedding was too slow")
        return None
    except EmbeddingError as err:
        LOGGER.warning("Memory search goes on without vectors: %s", err)
        return None
    return pack(vector)
