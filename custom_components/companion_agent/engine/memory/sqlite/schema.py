"""The embedded store's SQLite file: its schema, and opening it (a bad file moves aside).

One file holds everything: ``memories`` (one row per record, its vector as a float32
BLOB), ``memory_terms`` (FTS5 over the segmented text, rowid = the memory's rowid),
``entities`` and ``relations`` (the graph), and ``forgotten`` (the tombstones every write
checks in its own transaction). Every row carries its scope and its provenance. The file
runs in WAL mode; ``user_version`` says which schema it has: a version 1 file (before
provenance, graph ids and tombstones) is migrated in place when it is opened.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from ...errors import MemoryStoreError
from ...sqlite_file import move_aside
from ..tombstones import graph_id
from ..types import MemoryScope

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
    vector_model TEXT,
    via TEXT NOT NULL DEFAULT 'unknown',
    person TEXT,
    device TEXT,
    conversation TEXT
);
CREATE INDEX IF NOT EXISTS memories_scope
    ON memories (agent_id, environment, owner, kind, valid_until);
CREATE INDEX IF NOT EXISTS memories_topic
    ON memories (agent_id, environment, owner, topic_key) WHERE topic_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_supersedes ON memories (supersedes);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_terms USING fts5(
    terms, tokenize = 'porter unicode61 remove_diacritics 2'
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
    via TEXT NOT NULL DEFAULT 'unknown',
    person TEXT,
    device TEXT,
    conversation TEXT,
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
    via TEXT NOT NULL DEFAULT 'unknown',
    person TEXT,
    device TEXT,
    conversation TEXT,
    PRIMARY KEY (agent_id, environment, owner, subject_key, predicate_key, object_key)
);
CREATE INDEX IF NOT EXISTS relations_object
    ON relations (agent_id, environment, owner, object_key);
CREATE INDEX IF NOT EXISTS relations_id ON relations (id);
CREATE INDEX IF NOT EXISTS entities_id ON entities (id);
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
_PROVENANCE = ("via TEXT NOT NULL DEFAULT 'unknown'", "person TEXT", "device TEXT",
               "conversation TEXT")  # fmt: skip
_LEGACY_VIA = (
    "UPDATE memories SET via = CASE source WHEN 'service' THEN 'service' "
    "WHEN 'summary' THEN 'summary' WHEN '' THEN 'unknown' ELSE 'turn' END, "
    "conversation = CASE WHEN source IN ('service', 'summary', '') THEN NULL ELSE source END"
)


def open_database(path: Path) -> tuple[sqlite3.Connection, Path | None]:
    """Open (or create) the store at ``path`` for the calling thread.

    Returns the connection, and where an unusable file went when it had to be moved aside
    (None when the file was fine or new). A file of a newer schema is refused, not moved.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    moved: Path | None = None
    try:
        return _open_checked(path), None
    except sqlite3.DatabaseError as err:
        moved = move_aside(path, err)
    return _open_checked(path), moved


def _open_checked(path: Path) -> sqlite3.Connection:
    """Connect, check the file is a sound store of our schema, and create what is missing."""
    connection = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        version = _check(connection, path)
        if version == 1:
            migrate_v1(connection)
        connection.executescript(SCHEMA)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        connection.close()
        raise
    return connection


def _check(connection: sqlite3.Connection, path: Path) -> int:
    """Return the file's schema version; raise ``sqlite3.DatabaseError`` unless it is ours."""
    check = connection.execute("PRAGMA quick_check").fetchone()
    if check is None or check[0] != "ok":
        raise sqlite3.DatabaseError(f"quick_check: {check[0] if check else 'no answer'}")
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
    if version >= 1 and not names >= _TABLES:
        raise sqlite3.DatabaseError("a memory store with tables missing")
    return int(version)


def migrate_v1(db: sqlite3.Connection) -> None:
    """Bring a version 1 file to version 2: provenance, graph ids and times (one transaction).

    A record's provenance is read from its ``source``; a graph fact's id is made from its
    scope and keys, its ``said_at`` is when it was last merged.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        for table in ("memories", "entities", "relations"):
            for column in _PROVENANCE:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        for table in ("entities", "relations"):
            db.execute(f"ALTER TABLE {table} ADD COLUMN id TEXT")
            db.execute(f"ALTER TABLE {table} ADD COLUMN said_at TEXT")
        db.execute(_LEGACY_VIA)
        rows = db.execute("SELECT rowid, agent_id, environment, owner, key FROM entities")
        db.executemany(
            "UPDATE entities SET id = ?, said_at = created_at WHERE rowid = ?",
            [(graph_id("ent", _scope(r), str(r[4])), r[0]) for r in rows.fetchall()],
        )
        rows = db.execute(
            "SELECT rowid, agent_id, environment, owner, subject_key, predicate_key, object_key "
            "FROM relations"
        )
        db.executemany(
            "UPDATE relations SET id = ?, said_at = updated_at WHERE rowid = ?",
            [(graph_id("rel", _scope(r), *map(str, r[4:7])), r[0]) for r in rows.fetchall()],
        )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    LOGGER.info("Memory store migrated to schema %d", SCHEMA_VERSION)


def _scope(row: tuple[object, ...]) -> MemoryScope:
    """Return the scope of a ``(rowid, agent_id, environment, owner, …)`` row."""
    return MemoryScope(agent_id=str(row[1]), environment=str(row[2]), owner=str(row[3]))
