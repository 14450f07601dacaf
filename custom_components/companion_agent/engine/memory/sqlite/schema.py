"""The embedded store's SQLite file: its schema, and opening it (a bad file moves aside).

One file holds everything: ``memories`` (one row per record, its vector as a float32
BLOB), ``memory_terms`` (FTS5 over the segmented text, the turn before it in the same
conversation, and the names it is about; rowid = the memory's rowid), ``entities`` and
``relations`` (the graph). Every row carries its scope. The file runs in WAL mode
(``connection``); ``user_version`` says which schema it has, and an older file is migrated
when it opens (schema 1 had one FTS5 column: its terms move over, with no context or
names).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from ...errors import MemoryStoreError
from .connection import open_checked, quick_check

LOGGER = logging.getLogger(__name__)

SCHEMA_VERSION = 2
SCHEMA = """
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
    vector_model TEXT
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
    PRIMARY KEY (agent_id, environment, owner, subject_key, predicate_key, object_key)
);
CREATE INDEX IF NOT EXISTS relations_object
    ON relations (agent_id, environment, owner, object_key);
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
        _migrate(connection, version)
    connection.executescript(SCHEMA)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _migrate(connection: sqlite3.Connection, version: int) -> None:
    """Bring a file of an older schema up to this one, in one transaction."""
    LOGGER.info("Migrating the memory file from schema %s to %s", version, SCHEMA_VERSION)
    connection.execute("BEGIN IMMEDIATE")
    try:
        if version == 1:  # one FTS5 column → terms, context, names
            connection.execute("ALTER TABLE memory_terms RENAME TO memory_terms_v1")
            connection.execute(
                "CREATE VIRTUAL TABLE memory_terms USING fts5(terms, context, names, "
                "tokenize = 'porter unicode61 remove_diacritics 2')"
            )
            connection.execute(
                "INSERT INTO memory_terms (rowid, terms, context, names) "
                "SELECT rowid, terms, '', '' FROM memory_terms_v1"
            )
            connection.execute("DROP TABLE memory_terms_v1")
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except sqlite3.Error as err:  # not a bad file: never moved aside for this
        connection.execute("ROLLBACK")
        raise MemoryStoreError(
            f"the memory file could not be migrated ({err}); left as it is", retryable=True
        ) from err
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
