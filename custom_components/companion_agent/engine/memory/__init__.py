"""Memory: who remembers what, the stores behind one protocol, the three tiers, the outbox.

``models`` holds the records, scopes, queries, pages and the store protocols;
``companion`` the ``CompanionMemory`` a host holds (reads, writes, forget), ``hook`` the
turn's face of it; ``tiers/`` the recent window, summaries and extraction; ``outbox/`` the
durable queue of writes and the tombstones every write checks; ``retrieval/`` what a turn
reads, by relevance; ``stores/`` the embedded SQLite store, mem0 and Neo4j.
"""

from ..turn.exchanges import HOUSEHOLD
from .companion import CompanionMemory, MemorySettings
from .models import (
    MAX_PAGE,
    ExportPage,
    Forget,
    GraphFacts,
    GraphItem,
    GraphPage,
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
