"""Memory: who remembers what, the stores behind one protocol, the three tiers, the outbox."""

from ..turn.exchanges import HOUSEHOLD
from .companion import CompanionMemory, MemorySettings
from .models import (
    MAX_PAGE,
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
from .pages import ExportPage, GraphItem, GraphPage
from .provenance import Provenance, dump_provenance
from .retrieval.topics import statement_topic

__all__ = [
    "HOUSEHOLD",
    "MAX_PAGE",
    "CompanionMemory",
    "ExportPage",
    "Forget",
    "GraphFacts",
    "GraphItem",
    "GraphPage",
    "GraphStore",
    "MemoryHit",
    "MemoryKind",
    "MemoryQuery",
    "MemoryRecord",
    "MemoryScope",
    "MemorySettings",
    "MemoryStore",
    "NewMemory",
    "Provenance",
    "Relation",
    "dump_provenance",
    "statement_topic",
]
