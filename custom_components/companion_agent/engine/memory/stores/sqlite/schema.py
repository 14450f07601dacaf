"""The embedded store's SQLite file: its schema, opening it (a bad file moves aside), migrating it.

One file holds everything: ``memories`` (one row per record, its vector as a float32
BLOB), ``memory_terms`` (FTS5 over the segmented text, the turn before it in the same
conversation, and the names it is about; rowid = the memory's rowid), ``entities`` and
``relations`` (the graph), ``graph_statements`` (which statements said each entity and
relation: forgetting a statement takes what no other statement said) and ``forgotten``
(the tombstones every write checks in its own transaction). Every row carries its scope
and its provenance, the statement it was derived from included. The file runs in WAL mode
(``engine.sqlite``); ``user_version`` says which schema it has.

**Migrations.** An older file is brought from the version it has to the current one step
after step, all in one transaction, so a file written by any earlier release opens: schema
1 (one FTS5 column, no provenance) → 2 (the FTS5 index gains the context and names columns;
its terms move over) → 3 (provenance on every record and graph fact, graph ids and the time
each fact was said; the tombstones table is created with the schema) → 4 (the statement
each record and graph fact was derived from). A step that fails rolls everything back and
the file is left as it was (never moved aside for this).

Rows older than schema 4 name no statement. What can be matched is: a turn's records and
graph facts (``via`` turn or instruction) get their *legacy* statement, their conversation
and when they were said (``provenance.legacy_statement``), so what one exchange left is
forgotten together. A fact merged again later keeps the time of its last merge (and an
entity the conversation of its first), so one said by several exchanges is matched by the
last at most, and an entity said twice usually by none: it stays. Records written by a
person (the remember action, the to-do list) name no statement: each is its own.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

from ....errors import MemoryStoreError
from ....sqlite import open_checked, quick_check
from ...models import MemoryScope
from ...outbox.tombstones import graph_id

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


# Migrations: one step per version, all in one transaction.
PROVENANCE_COLUMNS = ("via TEXT NOT NULL DEFAULT 'unknown'", "person TEXT", "device TEXT",
                      "conversation TEXT")  # fmt: skip
"""The provenance columns schema 3 added (schema 4 adds ``statement``)."""
_LEGACY_VIA = (
    "UPDATE memories SET via = CASE source WHEN 'service' THEN 'service' "
    "WHEN 'summary' THEN 'summary' WHEN '' THEN 'unknown' ELSE 'turn' END, "
    "conversation = CASE WHEN source IN ('service', 'summary', '') THEN NULL ELSE source END"
)


def migrate(connection: sqlite3.Connection, version: int, target: int) -> None:
    """Bring a file of schema ``version`` up to ``target``, every step in one transaction."""
    LOGGER.info("Migrating the memory file from schema %s to %s", version, target)
    connection.execute("BEGIN IMMEDIATE")
    try:
        for step in range(version, target):
            _STEPS[step](connection)
        connection.execute(f"PRAGMA user_version = {target}")
    except sqlite3.Error as err:  # not a bad file: never moved aside for this
        connection.execute("ROLLBACK")
        raise MemoryStoreError(
            f"the memory file could not be migrated ({err}); left as it is", retryable=True
        ) from err
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def _terms_with_context(db: sqlite3.Connection) -> None:
    """Schema 1 → 2: one FTS5 column becomes terms, context and names (terms move over)."""
    db.execute("ALTER TABLE memory_terms RENAME TO memory_terms_v1")
    db.execute(
        "CREATE VIRTUAL TABLE memory_terms USING fts5(terms, context, names, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    db.execute(
        "INSERT INTO memory_terms (rowid, terms, context, names) "
        "SELECT rowid, terms, '', '' FROM memory_terms_v1"
    )
    db.execute("DROP TABLE memory_terms_v1")


def _provenance_and_graph_ids(db: sqlite3.Connection) -> None:
    """Schema 2 → 3: provenance columns, graph ids and times.

    A record's provenance is read from its ``source``; a graph fact's id is made from its
    scope and keys, its ``said_at`` is when it was last merged.
    """
    for table in ("memories", "entities", "relations"):
        for column in PROVENANCE_COLUMNS:
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


_GRAPH_STATEMENTS_4 = (
    "CREATE TABLE graph_statements (agent_id TEXT NOT NULL, owner TEXT NOT NULL, "
    "environment TEXT NOT NULL, item_id TEXT NOT NULL, statement TEXT NOT NULL, "
    "said_at TEXT NOT NULL, PRIMARY KEY (item_id, statement))"
)
"""The table as schema 4 made it (a later schema changes it in a step of its own)."""
_LEGACY_STATEMENT = (
    "statement = CASE WHEN via IN ('turn', 'instruction') AND conversation IS NOT NULL "
    "AND conversation != '' AND {said} IS NOT NULL "
    "THEN 'legacy:' || conversation || '@' || {said} END"
)


def _statements(db: sqlite3.Connection) -> None:
    """Schema 3 → 4: the statement of every record and graph fact a turn left (legacy).

    See the module: a turn's rows are named by their conversation and when they were said.
    """
    for table in ("memories", "entities", "relations"):
        db.execute(f"ALTER TABLE {table} ADD COLUMN statement TEXT")
    db.execute("UPDATE memories SET " + _LEGACY_STATEMENT.format(said="valid_from"))
    db.execute(_GRAPH_STATEMENTS_4)
    for table in ("entities", "relations"):
        db.execute(f"UPDATE {table} SET " + _LEGACY_STATEMENT.format(said="said_at"))
        db.execute(
            "INSERT OR IGNORE INTO graph_statements (agent_id, owner, environment, item_id, "
            f"statement, said_at) SELECT agent_id, owner, environment, id, statement, said_at "
            f"FROM {table} WHERE statement IS NOT NULL AND id IS NOT NULL"
        )


def _scope(row: tuple[object, ...]) -> MemoryScope:
    """Return the scope of a ``(rowid, agent_id, environment, owner, …)`` row."""
    return MemoryScope(agent_id=str(row[1]), environment=str(row[2]), owner=str(row[3]))


_STEPS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _terms_with_context,
    2: _provenance_and_graph_ids,
    3: _statements,
}
"""The step that takes a file from the key's version to the next."""
