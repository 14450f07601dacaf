"""One migration chain: a store file of any earlier schema opens at the current one.

Files as old main wrote them (schema 1, before recall) and as main wrote them after recall
(schema 2) keep every memory and graph fact, gain provenance read from their ``source``
and graph ids, and then forget wins over them like over anything new. Files of schema 3
(before statements) gain the legacy statement of what a turn left.
"""

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.memory.models import (
    Forget,
    MemoryScope,
    NewMemory,
)
from custom_components.companion_agent.engine.memory.outbox.tombstones import (
    graph_id,
    statement_forget,
)
from custom_components.companion_agent.engine.memory.provenance import Provenance
from custom_components.companion_agent.engine.memory.stores.sqlite.records_sql import iso
from custom_components.companion_agent.engine.memory.stores.sqlite.schema import SCHEMA_VERSION
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from tests.engine.memory import every_record
from tests.engine.memory.stores.old_files import old_person_file, schema_3_file

ANNA = MemoryScope(agent_id="nova", owner="user:anna")
MAY = datetime(2023, 5, 8, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize("version", [1, 2])
async def test_an_old_file_migrates_with_provenance_graph_ids_and_tombstones(
    tmp_path: Path, version: int
) -> None:
    """Schema 1 and 2 files open at the current schema; nothing is lost, forget works on them."""
    path = tmp_path / "memory.db"
    await asyncio.to_thread(old_person_file, path, MAY, version=version)
    store = await EmbeddedStore.create(path)
    try:
        records = {r.id: r for r in await every_record(store, [ANNA])}
        assert {r.text for r in records.values()} == {"Anna parks in bay 12", "Anna drinks tea"}
        detail, state = records["a2"], records["a3"]
        assert (detail.provenance.via, detail.provenance.conversation) == ("turn", "conv-7")
        assert (state.provenance.via, state.provenance.conversation) == ("service", None)
        assert [s.id for s in await store.current_states([ANNA])] == ["a3"]

        graph = await store.graph.export([ANNA])
        (relation,) = graph.relations
        assert relation.id == graph_id("rel", ANNA, "front door", "has code", "4711")
        assert (relation.at, relation.source) == (MAY, "conv-7")
        assert graph.total_entities == 2
        assert await store.graph.forget(Forget(record_id=relation.id)) == 1
        assert await store.graph.neighbourhood([ANNA], ["front door"]) == []

        forgotten = MAY + timedelta(days=1)
        assert await store.forget(Forget(owner=ANNA.owner, at=forgotten)) == 2
        late = NewMemory(scope=ANNA, text="Anna parks in bay 3", at=forgotten)  # said before
        assert await store.add([late]) == []
        new = NewMemory(scope=ANNA, text="Anna parks in bay 9", at=forgotten + timedelta(1))
        assert [r.text for r in await store.add([new])] == ["Anna parks in bay 9"]
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        columns = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
    db.close()
    assert {"via", "person", "device", "conversation", "statement"} <= columns


async def test_a_schema_3_file_forgets_what_one_exchange_left(tmp_path: Path) -> None:
    """Rows of schema 3 name no statement: a turn's get the legacy one (their conversation
    and when they were said), so forgetting one memory of an exchange forgets what that
    exchange left; an entity said again later, a person's own memory and another exchange's
    relation stay."""
    path = tmp_path / "memory.db"
    said, later = iso(MAY), iso(MAY + timedelta(minutes=3))
    anna = ANNA.owner
    ent = {key: graph_id("ent", ANNA, key) for key in ("locker", "7788", "blue")}
    code = graph_id("rel", ANNA, "locker", "has code", "7788")
    colour = graph_id("rel", ANNA, "locker", "is", "blue")
    rows: dict[str, list[tuple[object, ...]]] = {
        "memories": [
            ("m1", anna, "state", "self/locker", "Remember that my locker code is 7788",
             "conv-9", said, "instruction", "conv-9"),
            ("m2", anna, "detail", None, "Anna's locker code is 7788", "conv-9", said, "turn",
             "conv-9"),
            ("m3", anna, "state", "locker/code", "The locker code is 7788", "conv-9", said,
             "turn", "conv-9"),
            ("m4", anna, "detail", None, "Anna's locker is blue", "conv-9", later, "turn",
             "conv-9"),
            ("m5", anna, "detail", None, "Anna parks in bay 12", "service", said, "service",
             None),
        ],
        "entities": [
            (anna, "locker", ent["locker"], later, "turn", "conv-9"),
            (anna, "7788", ent["7788"], said, "turn", "conv-9"),
            (anna, "blue", ent["blue"], later, "turn", "conv-9"),
        ],
        "relations": [
            (anna, "locker", "has code", "7788", code, said, "turn", "conv-9"),
            (anna, "locker", "is", "blue", colour, later, "turn", "conv-9"),
        ],
    }  # fmt: skip
    await asyncio.to_thread(schema_3_file, path, rows)
    store = await EmbeddedStore.create(path)
    try:
        first = await store.get("m1")
        assert first is not None
        assert first.provenance.statement == f"legacy:conv-9@{said}"
        forget = statement_forget(first, MAY + timedelta(days=1))
        assert forget is not None
        assert await store.forget(Forget(record_id="m1")) == 1
        assert await store.forget(forget) == 2
        assert await store.graph.forget(forget) == 1
        assert sorted(r.id for r in await every_record(store, [ANNA])) == ["m4", "m5"]
        graph = await store.graph.export([ANNA])
        assert sorted(e.name for e in graph.entities) == ["blue", "locker"]
        assert [r.id for r in graph.relations] == [colour]
        late = NewMemory(
            scope=ANNA, text="Anna's locker code is 7788", at=MAY,
            provenance=Provenance(via="turn", conversation="conv-9"),
        )  # fmt: skip
        assert await store.add([late]) == []  # its legacy statement's tombstone refuses it
    finally:
        await store.close()
