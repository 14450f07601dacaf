"""Store files as earlier releases wrote them, for the migration tests.

Schema 1 is what main wrote before recall (one FTS5 column, no provenance, no graph ids);
schema 2 is what main wrote after recall (the FTS5 index with context and names columns).
"""

import sqlite3
from datetime import datetime
from pathlib import Path

_SCHEMA_1 = """
CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL, owner TEXT NOT NULL, environment TEXT NOT NULL,
    kind TEXT NOT NULL, topic TEXT, topic_key TEXT, text TEXT NOT NULL, source TEXT NOT NULL,
    created_at TEXT NOT NULL, valid_from TEXT NOT NULL, valid_until TEXT, superseded_by TEXT,
    supersedes TEXT, vector BLOB, vector_model TEXT);
CREATE VIRTUAL TABLE memory_terms USING fts5(
    terms, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE entities (agent_id TEXT NOT NULL, owner TEXT NOT NULL,
    environment TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, source TEXT NOT NULL,
    created_at TEXT NOT NULL, PRIMARY KEY (agent_id, environment, owner, key));
CREATE TABLE relations (agent_id TEXT NOT NULL, owner TEXT NOT NULL,
    environment TEXT NOT NULL, subject_key TEXT NOT NULL, subject TEXT NOT NULL,
    predicate_key TEXT NOT NULL, predicate TEXT NOT NULL, object_key TEXT NOT NULL,
    object TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, environment, owner, subject_key, predicate_key, object_key));
"""
_TERMS_2 = (
    "CREATE VIRTUAL TABLE memory_terms USING fts5(terms, context, names, "
    "tokenize = 'porter unicode61 remove_diacritics 2')"
)


def schema_1_file(path: Path, said: datetime, *, version: int = 1) -> None:
    """Write a store file as schema ``version`` (1 or 2) left it: one household memory."""
    with sqlite3.connect(path) as db:
        db.executescript(_SCHEMA_1)
        if version == 2:
            db.execute("DROP TABLE memory_terms")
            db.execute(_TERMS_2)
        db.execute(
            "INSERT INTO memories (id, agent_id, owner, environment, kind, text, source, "
            "created_at, valid_from) VALUES ('a1', 'nova', 'household', 'production', "
            "'detail', 'My cat sleeps all day', '', ?, ?)",
            (said.isoformat(), said.isoformat()),
        )
        db.execute("INSERT INTO memory_terms (rowid, terms) VALUES (1, 'my cat sleeps all day')")
        db.execute(f"PRAGMA user_version = {version}")
    db.close()


def old_person_file(path: Path, said: datetime, *, version: int) -> None:
    """Write a schema ``version`` file with Anna's detail from a turn, a conclusion from the
    service, and a relation of her graph (as the old release wrote each)."""
    schema_1_file(path, said, version=version)
    at = said.isoformat()
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO memories (id, agent_id, owner, environment, kind, text, source, "
            "created_at, valid_from) VALUES ('a2', 'nova', 'user:anna', 'production', "
            "'detail', 'Anna parks in bay 12', 'conv-7', ?, ?)",
            (at, at),
        )
        db.execute("INSERT INTO memory_terms (rowid, terms) VALUES (2, 'anna parks in bay 12')")
        db.execute(
            "INSERT INTO memories (id, agent_id, owner, environment, kind, topic, topic_key, "
            "text, source, created_at, valid_from) VALUES ('a3', 'nova', 'user:anna', "
            "'production', 'state', 'drink', 'drink', 'Anna drinks tea', 'service', ?, ?)",
            (at, at),
        )
        db.execute("INSERT INTO memory_terms (rowid, terms) VALUES (3, 'anna drinks tea')")
        for key in ("front door", "4711"):
            db.execute(
                "INSERT INTO entities VALUES ('nova', 'user:anna', 'production', ?, ?, "
                "'conv-7', ?)",
                (key, key, at),
            )
        db.execute(
            "INSERT INTO relations VALUES ('nova', 'user:anna', 'production', 'front door', "
            "'front door', 'has code', 'has code', '4711', '4711', 'conv-7', ?, ?)",
            (at, at),
        )
    db.close()


_PROVENANCE_3 = "via TEXT NOT NULL DEFAULT 'unknown', person TEXT, device TEXT, conversation TEXT"
_SCHEMA_3 = f"""
CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL, owner TEXT NOT NULL, environment TEXT NOT NULL,
    kind TEXT NOT NULL, topic TEXT, topic_key TEXT, text TEXT NOT NULL, source TEXT NOT NULL,
    created_at TEXT NOT NULL, valid_from TEXT NOT NULL, valid_until TEXT, superseded_by TEXT,
    supersedes TEXT, vector BLOB, vector_model TEXT, {_PROVENANCE_3});
CREATE VIRTUAL TABLE memory_terms USING fts5(terms, context, names,
    tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE entities (agent_id TEXT NOT NULL, owner TEXT NOT NULL,
    environment TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, source TEXT NOT NULL,
    created_at TEXT NOT NULL, id TEXT, said_at TEXT, {_PROVENANCE_3},
    PRIMARY KEY (agent_id, environment, owner, key));
CREATE TABLE relations (agent_id TEXT NOT NULL, owner TEXT NOT NULL,
    environment TEXT NOT NULL, subject_key TEXT NOT NULL, subject TEXT NOT NULL,
    predicate_key TEXT NOT NULL, predicate TEXT NOT NULL, object_key TEXT NOT NULL,
    object TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, id TEXT, said_at TEXT, {_PROVENANCE_3},
    PRIMARY KEY (agent_id, environment, owner, subject_key, predicate_key, object_key));
CREATE TABLE forgotten (environment TEXT NOT NULL, agent_id TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL DEFAULT '', key TEXT NOT NULL DEFAULT '', at TEXT NOT NULL,
    PRIMARY KEY (environment, agent_id, owner, key));
"""


def schema_3_file(path: Path, rows: dict[str, list[tuple[object, ...]]]) -> None:
    """Write a schema 3 file (provenance, no statements) holding ``rows`` by table.

    ``memories`` rows: (id, owner, kind, topic, text, source, valid_from, via,
    conversation); ``entities``: (owner, key, id, said_at, via, conversation);
    ``relations``: (owner, subject, predicate, object, id, said_at, via, conversation); all
    of persona ``nova`` in ``production``.
    """
    with sqlite3.connect(path) as db:
        db.executescript(_SCHEMA_3)
        for rowid, (rid, owner, kind, topic, text, source, said, via, talk) in enumerate(
            rows.get("memories", []), start=1
        ):
            db.execute(
                "INSERT INTO memories (rowid, id, agent_id, owner, environment, kind, topic, "
                "topic_key, text, source, created_at, valid_from, via, conversation) "
                "VALUES (?, ?, 'nova', ?, 'production', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (rowid, rid, owner, kind, topic, topic, text, source, said, said, via, talk),
            )
            db.execute(
                "INSERT INTO memory_terms (rowid, terms, context, names) VALUES (?, ?, '', '')",
                (rowid, str(text).lower()),
            )
        for owner, key, eid, said, via, talk in rows.get("entities", []):
            db.execute(
                "INSERT INTO entities (agent_id, owner, environment, key, name, source, "
                "created_at, id, said_at, via, conversation) "
                "VALUES ('nova', ?, 'production', ?, ?, ?, ?, ?, ?, ?, ?)",
                (owner, key, key, talk or "", said, eid, said, via, talk),
            )
        for owner, subject, predicate, obj, rid, said, via, talk in rows.get("relations", []):
            db.execute(
                "INSERT INTO relations (agent_id, owner, environment, subject_key, subject, "
                "predicate_key, predicate, object_key, object, source, created_at, updated_at, "
                "id, said_at, via, conversation) "
                "VALUES ('nova', ?, 'production', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (owner, subject, subject, predicate, predicate, obj, obj, talk or "", said,
                 said, rid, said, via, talk),
            )  # fmt: skip
        db.execute("PRAGMA user_version = 3")
    db.close()
