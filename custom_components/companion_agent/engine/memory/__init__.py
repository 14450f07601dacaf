"""Memory: who remembers what, the stores behind one protocol, the three tiers, the outbox."""

from .types import (
    Forget,
    GraphFacts,
    GraphStore,
    MemoryHit,
    MemoryKind,
    MemoryQuery,
    MemoryRecord,
    MemoryScope,
    MemoryStore,
    NewMemory,
    Relation,
)

__all__ = [
    "Forget",
    "GraphFacts",
    "GraphStore",
    "MemoryHit",
    "MemoryKind",
    "MemoryQuery",
    "MemoryRecord",
    "MemoryScope",
    "MemoryStore",
    "NewMemory",
    "Relation",
]
