"""Forget wins: whatever was running when the forget came, nothing said before it comes back.

Real peers: the embedded store on a real SQLite file, the outbox on disk, the exchange store,
the memory model and the embedding server over HTTP (the local scripted server, whose
answers a test can hold back until the forget has happened).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.memory.answers import JsonAnswers
from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from custom_components.companion_agent.engine.memory.embeddings import (
    EmbeddingSettings,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.hook import MemoryHook
from custom_components.companion_agent.engine.memory.models import Forget, MemoryScope, NewMemory
from custom_components.companion_agent.engine.memory.provenance import Provenance
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from custom_components.companion_agent.engine.memory.tiers.summaries import SessionSummaries
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.engine.memory import every_record
from tests.engine.memory.conftest import make_memory
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer
from tests.support.turns import Conversations, persona, run

ALICE = MemoryScope(agent_id="p1", owner="user:alice", environment="test")
BOB = MemoryScope(agent_id="p1", owner="user:bob", environment="test")
FORGET_ALICE = Forget(owner=ALICE.owner, environment="test")
EXTRACTED = json.dumps(
    {
        "facts": ["Alice's door code is 4711."],
        "conclusions": [
            {"subject": "self", "attribute": "door code", "conclusion": "The code is 4711."}
        ],
        "entities": ["front door"],
        "relations": [{"subject": "front door", "predicate": "has code", "object": "4711"}],
    }
)


def held_extraction(until: asyncio.Event) -> Reply:
    """Return the extraction answer, its first character at once and the rest once ``until``."""
    return Reply(chunks=(TextChunk(EXTRACTED[:1]), TextChunk(EXTRACTED[1:], hold=until)))


async def nothing_of_alice(memory: CompanionMemory, store: EmbeddedStore) -> None:
    """Assert no record, graph fact, exchange or waiting write of Alice's is left."""
    assert await every_record(store, ALICE.readable()) == []
    page = await store.graph.export([ALICE])
    assert (page.entities, page.relations) == ((), ())
    assert await store.graph.neighbourhood([ALICE], ["front door"]) == []
    assert await memory.window(ALICE).turns() == []
    assert await memory.outbox.entries() == []


async def test_forget_while_the_model_is_still_extracting(
    memory: CompanionMemory, store: EmbeddedStore, llm_server: LLMServer
) -> None:
    """The extraction answers after the forget: its memories never land (today's bug)."""
    release = asyncio.Event()
    llm_server.script_structured(held_extraction(release))
    await memory.after_turn(ALICE, "The door code is 4711.", "Noted.", source="c1", model=None)
    await llm_server.asked(structured=1)
    await memory.forget(FORGET_ALICE)
    release.set()
    assert await memory.wait_idle(5)
    await nothing_of_alice(memory, store)
    assert memory.writer.refused + (await memory.outbox.counts())["forgotten"] >= 1


async def test_forget_while_the_turn_is_still_being_answered(
    memory: CompanionMemory,
    store: EmbeddedStore,
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
) -> None:
    """The turn ends after the forget: neither its window row nor its extraction comes back."""
    release = asyncio.Event()
    llm_server.script(Reply.held("The code ", "is noted.", until=release))
    llm_server.script_structured(*[Reply.text(EXTRACTED)] * 3)
    talk = Conversations(Path(), memory.exchanges)
    ask = talk.request(
        "Remember that the door code is 4711.",
        hooks=(MemoryHook(memory, ALICE, None),),
        owner=ALICE.owner,
    )
    turn = asyncio.create_task(
        run(TurnRunner(), persona(chat_model), replace(ask, window=memory.window(ALICE)))
    )
    await llm_server.asked(chat=1)
    await memory.forget(FORGET_ALICE)
    release.set()
    done = await turn
    assert done.result.outcome == "complete"
    assert await memory.wait_idle(5)
    await nothing_of_alice(memory, store)
    assert await talk.turns() == []  # the conversation's view of the same row
    assert llm_server.structured_requests == []  # the exchange was refused at the door


async def test_forget_while_a_summary_is_being_written(
    memory: CompanionMemory,
    store: EmbeddedStore,
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
) -> None:
    """A summary of Alice's old exchanges answered after the forget is not stored."""
    summaries = SessionSummaries(memory.writer.queue)  # one memory does not know of
    release = asyncio.Event()
    llm_server.script_structured(
        Reply(chunks=(TextChunk('{"summary": "Alice'), TextChunk(' told a code."}', hold=release)))
    )
    old = time.time() - 60
    turns = [StoredTurn(user=f"Code part {n}", time=old + n, began=old + n) for n in range(3)]
    summaries.overflowed(ALICE, turns, JsonAnswers(chat_model, timeout=5))
    await llm_server.asked(structured=1)
    await memory.forget(FORGET_ALICE)
    release.set()
    await summaries.wait_idle()
    assert await memory.wait_idle(5)
    assert await every_record(store, [ALICE]) == []


async def test_forget_while_vectors_are_being_backfilled(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    """A vector embedded for a forgotten record never lands on the record that took its row."""
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=llm_server.url, model="test-embed"))
    # the background backfill is off: the one backfill here is the one the test holds
    store = await EmbeddedStore.create(tmp_path / "memory.db", embedder=embedder, backfill=False)
    try:
        llm_server.embeddings_down = True  # stored without vectors, for the backfill
        await store.add([NewMemory(scope=ALICE, text=f"Alice secret {n}") for n in range(3)])
        llm_server.embeddings_down = False
        llm_server.embeddings_hold = release = asyncio.Event()
        backfill = asyncio.create_task(store.backfill_vectors())
        await llm_server.asked(embeddings=1)
        assert await store.forget(FORGET_ALICE) == 3
        llm_server.embeddings_down = True
        await store.add([NewMemory(scope=BOB, text=f"Bob note {n}") for n in range(3)])
        llm_server.embeddings_down = False
        release.set()
        assert await backfill == 3  # taken; none stored: their records are gone
        with closing(sqlite3.connect(tmp_path / "memory.db")) as db:
            rows = db.execute("SELECT text, vector FROM memories ORDER BY rowid").fetchall()
        assert [(text, vector) for text, vector in rows] == [
            (f"Bob note {n}", None) for n in range(3)
        ]
    finally:
        await store.close()
        await embedder.aclose()


async def test_the_tombstone_survives_a_restart(
    tmp_path: Path, store: EmbeddedStore, chat_model: OpenAIChatModel, llm_server: LLMServer
) -> None:
    """A write said before the forget and queued on disk is refused after a restart too."""
    first = await make_memory(tmp_path, store, chat_model, store.graph)
    await first.outbox.close()  # the write waits on disk
    before = datetime.now(UTC)
    await first.forget(FORGET_ALICE)
    late = NewMemory(scope=ALICE, text="Said before the forget.", at=before)
    await first.writer.queue(late)
    await first.close(grace=0.5)
    reopened = await EmbeddedStore.create(tmp_path / "memory.db")
    again = await make_memory(tmp_path, reopened, chat_model, reopened.graph)
    try:
        await again.writer.queue(late)
        await again.remember(ALICE, "Said after the forget.")
        assert await again.wait_idle(5)
        assert [r.text for r in await every_record(reopened, [ALICE])] == ["Said after the forget."]
        assert len(again.ledger) == 1
    finally:
        await again.close(grace=0.5)
        await again.exchanges.close()


async def test_a_statements_tombstone_survives_a_restart(
    tmp_path: Path, store: EmbeddedStore, chat_model: OpenAIChatModel, llm_server: LLMServer
) -> None:
    """A memory forgotten by id refuses, after a restart too, whatever its statement still
    writes — in the outbox, the ledger, the store's own transaction — and its turn."""
    first = await make_memory(tmp_path, store, chat_model, store.graph)
    origin = Provenance(via="turn", conversation="c1", statement="turn-1")
    said = datetime.now(UTC)
    record = await first.remember(ALICE, "Remember my locker code is 7788.", topic="self/locker",
                                  provenance=origin)  # fmt: skip
    assert record is not None
    await first.forget(Forget(record_id=record.id, environment="test"))
    await first.close(grace=0.5)
    await first.exchanges.close()

    reopened = await EmbeddedStore.create(tmp_path / "memory.db")
    again = await make_memory(tmp_path, reopened, chat_model, reopened.graph)
    try:
        derived = NewMemory(scope=ALICE, text="Alice's locker code is 7788.", at=said,
                            provenance=origin)  # fmt: skip
        await again.writer.queue(derived)
        assert (await again.outbox.counts())["forgotten"] == 1  # screened as it was put
        assert await again.writer.add([derived]) == []  # the ledger, read from disk
        assert await reopened.add([derived]) == []  # the store's own tombstone
        view = again.exchanges.conversation("p1", "c1", owner=ALICE.owner, windowed=True)
        await view.append(StoredTurn(user="Remember my locker code is 7788.", trace_id="turn-1",
                                     time=said.timestamp(), began=said.timestamp()))  # fmt: skip
        assert await view.turns() == []
        other = NewMemory(scope=ALICE, text="Alice's bike is red.", at=said,
                          provenance=Provenance(via="turn", statement="turn-2"))  # fmt: skip
        assert [r.text for r in await again.writer.add([other])] == ["Alice's bike is red."]
    finally:
        await again.close(grace=0.5)
        await again.exchanges.close()
