"""The embedded store's SQLite file: its schema, and opening it (a bad file moves aside).

One file holds everything: ``memories`` (one row per record, its vector as a float32
BLOB), ``memory_terms`` (FTS5 over the segmented text, the turn before it in the same
conversation, and the names it is about; rowid = the memory's rowid), ``entities`` and
``relations`` (the graph), ``graph_statements`` (which statements said each entity and
relation: forgetting a statement takes what no other statement said) and ``forgotten``
(the tombstones every write checks in its own transaction). Every row carries its scope
and its provenance, the statement it was derived from included. The file runs in WAL mode
(``engine.sqlite``); ``user_version`` says which schema it has, and an older file is migrated
when it opens, one step after another (``migrations``).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from ....errors import MemoryStoreError
from ....sqlite import open_checked, quick_check
from .migrations import migrate

LOGGER = logging.getLogger(__name__)

SCHEMA_VERSION = 4
PROVENANCE = """via TEXT NOT NULL DEFAULT 'unknown',
    person TEXT,
    device TEXT,
    conversation TEXT,
    statement TEXT"""
"""Where a row's words came from: through what (``via``), from whom, on which device, in
which conversation, from which statement; the same columns on memories, entities and
relations (an entity keeps its first statement, a relation its last: ``graph_statements``
has them all)."""
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    environment TEXT NOT NULL,
    kind TEXT NOT NULL,
    topic TEXT,
    topic_key TEXT,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    valid_from TEXT NOT NULL,
    valid_until TEXT,
    superseded_by TEXT,
    supersedes TEXT,
    vector BLOB,
    vector_model TEXT,
    {PROVENANCE}
);
CREATE INDEX IF NOT EXISTS memories_scope
    ON memories (agent_id, environment, owner, kind, valid_until);
CREATE INDEX IF NOT EXISTS memories_topic
    ON memories (agent_id, environment, owner, topic_key) WHERE topic_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_supersedes ON memories (supersedes);
CREATE INDEX IF NOT EXISTS memories_source
    ON memories (agent_id, environment, owner, source, kind);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_terms USING fts5(
    terms, context, names, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS entities (
    agent_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    environment TEXT NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    id TEXT,
    said_at TEXT,
    {PROVENANCE},
    PRIMARY KEY (agent_id, environment, owner, key)
);
CREATE TABLE IF NOT EXISTS relations (
    agent_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    environment TEXT NOT NULL,
    subject_key TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate_key TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object_key TEXT NOT NULL,
    object TEXT NOT NULL,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    id TEXT,
    said_at TEXT,
    {PROVENANCE},
    PRIMARY KEY (agent_id, environment, owner, subject_key, predicate_key, object_key)
);
CREATE INDEX IF NOT EXISTS relations_object
    ON relations (agent_id, environment, owner, object_key);
CREATE INDEX IF NOT EXISTS relations_id ON relations (id);
CREATE INDEX IF NOT EXISTS entities_id ON entities (id);
CREATE INDEX IF NOT EXISTS memories_statement
    ON memories (statement, agent_id, environment, owner) WHERE statement IS NOT NULL;
CREATE TABLE IF NOT EXISTS graph_statements (
    agent_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    environment TEXT NOT NULL,
    item_id TEXT NOT NULL,
    statement TEXT NOT NULL,
    said_at TEXT NOT NULL,
    PRIMARY KEY (item_id, statement)
);
CREATE INDEX IF NOT EXISTS graph_statements_statement
    ON graph_statements (statement, agent_id, environment, owner);
CREATE TABLE IF NOT EXISTS forgotten (
    environment TEXT NOT NULL,
    agent_id TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL DEFAULT '',
    key TEXT NOT NULL DEFAULT '',
    at TEXT NOT NULL,
    PRIMARY KEY (environment, agent_id, owner, key)
);
"""
_TABLES = frozenset({"memories", "memory_terms", "entities", "relations"})


def open_database(path: Path) -> tuple[sqlite3.Connection, Path | None]:
    """Open (or create) the store at ``path`` for the calling thread (a bad file moves aside).

    Returns the connection, and where an unusable file went when it had to be moved aside
    (None when the file was fine or new). A file of a newer schema is refused, not moved.
    """
    return open_checked(path, _prepare, synchronous="NORMAL")


def _prepare(connection: sqlite3.Connection, path: Path) -> None:
    """Check the file is a sound store of our schema, and create what is missing."""
    quick_check(connection)
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise MemoryStoreError(
            f"{path} has memory schema {version}, newer than this version knows "
            f"({SCHEMA_VERSION}); left as it is",
            retryable=False,
        )
    names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    if version == 0 and names:
        raise sqlite3.DatabaseError("a SQLite file, but not a memory store")
    if version > 0 and not names >= _TABLES:
        raise sqlite3.DatabaseError("a memory store with tables missing")
    if 0 < version < SCHEMA_VERSION:
        migrate(connection, version, SCHEMA_VERSION)
    connection.executescript(SCHEMA)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
