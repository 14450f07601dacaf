"""A memory made ready to insert: checked and cut at the boundary, segmented, embedded."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from ...chars import clean_text
from ...errors import EmbeddingError, MemoryInputError
from ..embeddings import Embedder
from ..inputs import MAX_FIELD_CHARS, clean_scope, memory_text
from ..keywords import fold, segment
from ..types import MemoryKind, MemoryScope, NewMemory
from .vectors import pack

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedMemory:
    """A memory checked and cut at the boundary, ready to insert."""

    id: str
    scope: MemoryScope
    text: str
    terms: str
    kind: MemoryKind
    topic: str | None
    topic_key: str | None
    source: str
    at: datetime
    vector: bytes | None = None
    vector_model: str | None = None


def prepare(memory: NewMemory) -> PreparedMemory:
    """Return ``memory`` checked and cut; raise ``MemoryInputError`` when it is unusable."""
    text = memory_text(memory.text)
    if not text:
        raise MemoryInputError("a memory needs some text")
    topic = memory_text(memory.topic, MAX_FIELD_CHARS) if memory.topic else None
    if memory.kind == "state" and not topic:
        raise MemoryInputError("a state memory needs a topic")
    return PreparedMemory(
        id=uuid.uuid4().hex,
        scope=clean_scope(memory.scope),
        text=text,
        terms=segment(text),
        kind=memory.kind,
        topic=topic or None,
        topic_key=" ".join(fold(topic).split()) if topic else None,
        source=clean_text(memory.source, MAX_FIELD_CHARS),
        at=memory.at or datetime.now(UTC),
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
        PreparedMemory(
            id=m.id, scope=m.scope, text=m.text, terms=m.terms, kind=m.kind, topic=m.topic,
            topic_key=m.topic_key, source=m.source, at=m.at, vector=pack(v), vector_model=model,
        )
        for m, v in zip(prepared, vectors, strict=True)
    ]  # fmt: skip
