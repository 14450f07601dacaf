"""Memory: who remembers what, the stores behind one protocol, the three tiers, the outbox."""

from .companion import CompanionMemory, MemorySettings
from .instructions import instruction_topic
from .types import (
    HOUSEHOLD,
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
    "HOUSEHOLD",
    "CompanionMemory",
    "Forget",
    "GraphFacts",
    "GraphStore",
    "MemoryHit",
    "MemoryKind",
    "MemoryQuery",
    "MemoryRecord",
    "MemoryScope",
    "MemorySettings",
    "MemoryStore",
    "NewMemory",
    "Relation",
    "instruction_topic",
]
