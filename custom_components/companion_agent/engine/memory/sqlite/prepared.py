"""A memory made ready to insert: checked and cut at the boundary, segmented, embedded."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ...chars import valid_text
from ...errors import EmbeddingError, MemoryInputError
from ..embeddings import Embedder
from ..inputs import MAX_FIELD_CHARS, clean_scope, clean_text
from ..keywords import fold, segment
from ..provenance import Provenance
from ..tombstones import memory_key
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
    provenance: Provenance
    vector: bytes | None = None
    vector_model: str | None = None

    @property
    def key(self) -> str:
        """Return the content key a one-record tombstone names (its topic, or its text)."""
        return memory_key(self.kind == "state", self.topic, self.text)


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
        kind=memory.kind,
        topic=topic or None,
        topic_key=" ".join(fold(topic).split()) if topic else None,
        source=valid_text(memory.source)[:MAX_FIELD_CHARS],
        at=memory.at or datetime.now(UTC),
        provenance=memory.provenance.cleaned(),
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
