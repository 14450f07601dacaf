"""Forget by id wins over the extraction of its statement at every step of the write.

"Remember that my locker code is 7788" is a conclusion at once (the turn's lasting
instruction). The turn is then stored and its exchange goes through the outbox to the
memory model, whose answer becomes a fact, a conclusion, an entity and a relation, none of
them with the instruction's content key. The forget of the instruction's conclusion by id
is interleaved with that write by a deterministic scheduler (``tests.support.interleaving``)
over every atomic step of both — a SQLite transaction (the exchange store, the outbox, the
embedded store and graph), the model's answer, a call into mem0, a Bolt transaction: the
write takes its first ``i`` steps, the forget its first ``j``, then the write all of its
and the forget the rest, for every ``i`` and ``j`` (today 15 × 6 steps on the embedded
store and its graph, 17 × 6 on mem0 with the graph on FalkorDB). Whatever the pair,
nothing the statement left remains — no record, graph fact, stored turn or waiting write —
and what an earlier statement left stays, ``locker`` (which both named) included.

Real peers: SQLite files, the memory model and the embeddings over HTTP (the local scripted
server), mem0 on a local Qdrant, the neo4j driver on FalkorDB's Bolt listener.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.llm import NO_RETRY, LLMSettings, OpenAIChatModel
from custom_components.companion_agent.engine.memory.answers import JsonAnswers
from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from custom_components.companion_agent.engine.memory.embeddings import (
    EmbeddingSettings,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.hook import MemoryHook
from custom_components.companion_agent.engine.memory.models import (
    Forget,
    GraphStore,
    MemoryScope,
    MemoryStore,
)
from custom_components.companion_agent.engine.memory.outbox.tombstones import STATEMENT
from custom_components.companion_agent.engine.memory.stores.mem0.setup import Mem0Settings
from custom_components.companion_agent.engine.memory.stores.mem0.store import Mem0Store
from custom_components.companion_agent.engine.memory.stores.mem0.worker import Mem0Worker
from custom_components.companion_agent.engine.memory.stores.neo4j.bolt import BoltConnection
from custom_components.companion_agent.engine.memory.stores.neo4j.graph import (
    Neo4jGraph,
    Neo4jSettings,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from custom_components.companion_agent.engine.plugins.plugin import TurnContext
from custom_components.companion_agent.engine.sqlite import SQLiteWorker
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.engine.memory import every_record
from tests.engine.memory.conftest import make_memory
from tests.support.interleaving import REST, WAIT, Interleaving
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

FORGET = "forget"
SAID = "Remember that my locker code is 7788."
BLUE = json.dumps(
    {
        "facts": ["Alice's locker is blue."],
        "conclusions": [],
        "entities": ["locker", "blue"],
        "relations": [{"subject": "locker", "predicate": "is", "object": "blue"}],
    }
)
LOCKER = json.dumps(
    {
        "facts": ["Alice's locker code is 7788."],
        "conclusions": [
            {"subject": "locker", "attribute": "code", "conclusion": "The locker code is 7788."}
        ],
        "entities": ["locker", "7788"],
        "relations": [{"subject": "locker", "predicate": "has code", "object": "7788"}],
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Peers:
    """The store and graph every interleaving of one backend shares (each its own persona)."""

    store: MemoryStore
    graph: GraphStore


def by_exchange(body: dict[str, object], number: int) -> Reply:
    """Answer an extraction by the exchange it reads (never the other's, whatever the order)."""
    said = str(body.get("messages"))
    return Reply.text(LOCKER if "7788" in said else BLUE if "blue" in said else "{}")


@pytest.fixture
async def model_server(socket_enabled: None) -> AsyncIterator[LLMServer]:
    """Run the local model server; its memory model answers each exchange for itself."""
    async with LLMServer(structured_responder=by_exchange) as server:
        yield server


@pytest.fixture
async def memory_model(model_server: LLMServer) -> AsyncIterator[OpenAIChatModel]:
    """Return the real OpenAI SDK adapter on the local server, with no retries."""
    model = OpenAIChatModel(
        LLMSettings(base_url=model_server.url, model="test-model", retry=NO_RETRY)
    )
    yield model
    await model.aclose()


@pytest.fixture(params=["embedded", "mem0+falkordb"])
def falkordb_uri(request: pytest.FixtureRequest) -> str | None:
    """Return each backend in turn: None for the embedded store and its graph, else the Bolt
    URI of FalkorDB, for mem0 with the graph there (the two with no transaction to share)."""
    return None if request.param == "embedded" else str(request.getfixturevalue("falkordb"))


@pytest.fixture
async def shared(
    falkordb_uri: str | None, model_server: LLMServer, tmp_path: Path
) -> AsyncIterator[Peers]:
    """Return the store and graph every interleaving of the backend shares."""
    if falkordb_uri is None:
        store = await EmbeddedStore.create(tmp_path / "memory.db")
        try:
            yield Peers(store=store, graph=store.graph)
        finally:
            await store.close()
        return
    async with AsyncExitStack() as stack:
        embedder = OpenAIEmbedder(EmbeddingSettings(base_url=model_server.url, model="test-embed"))
        stack.push_async_callback(embedder.aclose)
        mem0 = await Mem0Store.create(Mem0Settings(folder=tmp_path / "mem0"), embedder)
        stack.push_async_callback(mem0.close)
        graph = Neo4jGraph(Neo4jSettings(uri=falkordb_uri))
        stack.push_async_callback(graph.close)
        yield Peers(store=mem0, graph=graph)


@dataclass(slots=True)
class Race:
    """One interleaving's memory, persona and turn."""

    memory: CompanionMemory
    scope: MemoryScope
    hook: MemoryHook
    ctx: TurnContext
    conclusion: str


async def prepared(peers: Peers, folder: Path, model: OpenAIChatModel, persona: str) -> Race:
    """Return memory in ``folder`` on the shared peers, ``persona``'s earlier statement
    extracted, and the instruction of the statement in question stored."""
    memory = await make_memory(folder, peers.store, model, peers.graph)
    scope = MemoryScope(agent_id=persona, owner="user:alice", environment="test")
    ctx = TurnContext(conversation_id=f"{persona}-talk", profile_id="default", user_id="alice")
    earlier = MemoryHook(memory, scope, None, statement=f"{persona}-s0")
    await earlier.on_before_turn("My locker is blue.", ctx)
    await earlier.on_after_turn("My locker is blue.", "Nice.", ctx)
    assert await memory.wait_idle(10)
    hook = MemoryHook(memory, scope, None, statement=f"{persona}-s1")
    await hook.on_before_turn(SAID, ctx)
    (conclusion,) = [r for r in await every_record(memory.store, [scope]) if r.kind == "state"]
    return Race(memory=memory, scope=scope, hook=hook, ctx=ctx, conclusion=conclusion.id)


async def write(race: Race) -> None:
    """Store the turn, then queue its exchange (the outbox's worker extracts it)."""
    view = race.memory.exchanges.conversation(
        race.scope.agent_id, race.ctx.conversation_id, owner=race.scope.owner, windowed=True
    )
    now = time.time()
    said = StoredTurn(user=SAID, time=now, began=now, trace_id=race.hook.statement)
    await view.append(said)
    await race.hook.on_after_turn(SAID, "Noted.", race.ctx)


async def forget(race: Race) -> int:
    """Forget the instruction's conclusion by id."""
    return await race.memory.forget(Forget(record_id=race.conclusion, environment="test"))


async def only_the_earlier_statement_left(race: Race) -> None:
    """Assert nothing of the forgotten statement is left, and the earlier one's all is."""
    memory, scope = race.memory, race.scope
    assert [r.text for r in await every_record(memory.store, [scope])] == [
        "Alice's locker is blue."
    ]
    assert memory.graph is not None
    page = await memory.graph.export([scope])
    assert sorted(e.name for e in page.entities) == ["blue", "locker"]
    assert [(r.relation.subject, r.relation.predicate, r.relation.object) for r in page.relations
            if r.relation is not None] == [("locker", "is", "blue")]  # fmt: skip
    walk = await memory.graph.neighbourhood([scope], ["locker", "7788"])
    assert [(r.subject, r.predicate, r.object) for r in walk] == [("locker", "is", "blue")]
    assert [t.user for t in await memory.window(scope).turns()] == []
    assert await memory.outbox.entries() == []
    statement = STATEMENT + race.hook.statement
    assert any(t.key == statement for t in memory.ledger.tombstones)


async def release(race: Race) -> None:
    """Stop the interleaving's summaries, outbox and exchange store (the peers stay open)."""
    await race.memory.summaries.close(0.1)
    await race.memory.outbox.close()
    await race.memory.exchanges.close()


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch, shared: Peers) -> Interleaving:
    """Return a scheduler gating every atomic step the write and the forget take."""
    gates = Interleaving()
    gates.gate(monkeypatch, SQLiteWorker, "run")
    gates.gate(monkeypatch, SQLiteWorker, "transaction")
    gates.gate(monkeypatch, JsonAnswers, "ask")
    gates.gate(monkeypatch, Mem0Worker, "call")
    gates.gate(monkeypatch, OpenAIEmbedder, "embed")
    gates.gate(monkeypatch, BoltConnection, "run")
    return gates


async def written(writer: asyncio.Task[None], memory: CompanionMemory) -> None:
    """Wait until the turn is stored and queued and the outbox has taken all it left."""
    await writer
    assert await memory.outbox.drained(WAIT)


async def run_race(
    race: Race, steps: Interleaving, i: float, j: float
) -> tuple[str | None, str | None]:
    """Let the write take ``i`` steps, the forget ``j``, then the write all, then the forget.

    Return the steps each stopped before (None: it ended first).
    """
    await steps.allow(REST, i)
    await steps.allow(FORGET, 0)
    steps.taken.clear()
    steps.active = True
    try:
        writer = asyncio.create_task(write(race))
        writing = asyncio.create_task(written(writer, race.memory))
        write_stop = await steps.stopped(REST, writing)
        forgetting = asyncio.create_task(forget(race))
        steps.name(forgetting, FORGET)
        await steps.allow(FORGET, j)
        forget_stop = await steps.stopped(FORGET, forgetting)
        await steps.allow(REST, math.inf)
        await writing
        await steps.allow(FORGET, math.inf)
        await forgetting
    finally:
        steps.active = False
    assert await race.memory.wait_idle(WAIT)
    return write_stop, forget_stop


async def test_forget_by_id_wins_at_every_step_of_the_extraction(
    shared: Peers,
    steps: Interleaving,
    tmp_path: Path,
    memory_model: OpenAIChatModel,
) -> None:
    """Every pair (write steps, forget steps) leaves nothing of the forgotten statement."""
    first = await prepared(shared, tmp_path / "whole", memory_model, "whole")
    assert await run_race(first, steps, math.inf, math.inf) == (None, None)
    writes, forgets = steps.taken[REST], steps.taken[FORGET]
    assert writes >= 8, steps.steps  # stored, queued, extracted, written, merged
    assert forgets >= 5, steps.steps  # resolved, tombstones, records, graph, turn
    await only_the_earlier_statement_left(first)
    await release(first)
    raced: set[tuple[int, int]] = set()
    for i in range(writes + 1):
        for j in range(forgets + 1):
            persona = f"p{i}-{j}"
            race = await prepared(shared, tmp_path / persona, memory_model, persona)
            steps.steps.clear()
            try:
                stops = await run_race(race, steps, i, j)
                await only_the_earlier_statement_left(race)
            except (AssertionError, TimeoutError) as err:
                raise AssertionError(f"write {i} steps, forget {j}: {steps.steps}") from err
            await release(race)
            assert (stops[0] is None) == (i == writes), (i, stops)  # the write stopped at i
            if stops[1] is not None:
                raced.add((i, j))
    assert {i for i, _ in raced} == set(range(writes + 1)), raced  # at every step, forget
    # stopped part way (the rest of the pairs: it had ended, as a smaller ``j`` tested)
