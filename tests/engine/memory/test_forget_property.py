"""The property: for any interleaving of writes, extractions and a forget, nothing dated at or
before the forget is readable after it.

Each example starts a fresh memory (a real SQLite store and graph, the outbox on disk, the
exchange store, the memory model over HTTP whose extraction answers come after a drawn
delay) and runs a drawn mix of writes of Alice's and Bob's — conclusions through the
service, lasting instructions, exchanges for extraction, summaries, graph facts, turns into
the recent window — each after a drawn delay, with one forget of Alice somewhere among
them. Once everything has settled, every record, graph fact and exchange of Alice's still
readable must have been said after the forget; Bob's are all there.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from custom_components.companion_agent.engine.llm import NO_RETRY, LLMSettings, OpenAIChatModel
from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from custom_components.companion_agent.engine.memory.models import (
    Forget,
    GraphFacts,
    MemoryScope,
    NewMemory,
    Relation,
)
from custom_components.companion_agent.engine.memory.outbox.payloads import graph_entry
from custom_components.companion_agent.engine.memory.provenance import Provenance
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.engine.memory import every_record
from tests.engine.memory.conftest import make_memory
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer

ALICE = MemoryScope(agent_id="p1", owner="user:alice", environment="test")
BOB = MemoryScope(agent_id="p1", owner="user:bob", environment="test")
KINDS = ("remember", "instruction", "exchange", "summary", "graph", "turn")
DELAYS = st.sampled_from([0.0, 0.0, 0.001, 0.003, 0.01, 0.03])


@dataclass(frozen=True, slots=True)
class Write:
    """One drawn write: its kind, whose, after how long, and how late the model answers."""

    kind: str
    alice: bool
    delay: float
    answer_delay: float


WRITES = st.builds(
    Write, kind=st.sampled_from(KINDS), alice=st.booleans(), delay=DELAYS, answer_delay=DELAYS
)


def extraction(n: int, delay: float) -> Reply:
    """Return an extraction answer naming fact ``n``, sent after ``delay`` seconds."""
    body = json.dumps(
        {
            "facts": [f"fact {n}"],
            "conclusions": [{"subject": "self", "attribute": f"a{n}", "conclusion": f"c{n}"}],
            "entities": [f"thing {n}"],
            "relations": [{"subject": "owner", "predicate": "has", "object": f"thing {n}"}],
        }
    )
    return Reply(chunks=(TextChunk(body[:1]), TextChunk(body[1:], delay=delay)))


def write_of(memory: CompanionMemory, write: Write, n: int) -> Callable[[], Awaitable[object]]:
    """Return the call that makes one drawn write, dated when it starts."""
    scope = ALICE if write.alice else BOB

    async def made() -> None:
        """Make the write (each dates itself now)."""
        now = datetime.now(UTC)
        match write.kind:
            case "remember":
                await memory.remember(scope, f"note {n}", topic=f"t{n}")
            case "instruction":  # a turn: what it reads, then its exchange queued
                said = f"From now on, call me N{n}."
                await memory.before_turn(scope, said, began=now)
                await memory.after_turn(scope, said, "Sure.", source="c", model=None, began=now)
            case "exchange":
                await memory.after_turn(
                    scope, f"I have thing {n}.", "Nice.", source="c", model=None, began=now
                )
            case "summary":
                summary = NewMemory(
                    scope=scope, text=f"summary {n}", kind="summary", at=now,
                    provenance=Provenance(via="summary"),
                )  # fmt: skip
                await memory.writer.queue(summary)
            case "graph":
                facts = GraphFacts(
                    relations=(Relation(subject="owner", predicate="owns", object=f"g{n}"),), at=now
                )
                await memory.outbox.put("graph", graph_entry(scope, facts))
            case _:
                view = memory.exchanges.conversation(
                    "p1", f"c{n}", owner=scope.owner, windowed=True
                )
                began = time.time()
                await view.append(StoredTurn(user=f"turn {n}", time=began, began=began))

    return made


async def scenario(writes: list[Write], forget_at: int, forget_delay: float) -> Readable:
    """Run one interleaving; once everything settled, return what can still be read."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        async with LLMServer() as server:
            server.script_structured(*(extraction(n, w.answer_delay) for n, w in enumerate(writes)))
            model = OpenAIChatModel(
                LLMSettings(
                    base_url=server.url, model="test-model", retry=NO_RETRY, chunk_timeout=5
                )
            )
            store = await EmbeddedStore.create(root / "memory.db")
            memory = await make_memory(root, store, model, store.graph)
            try:
                await interleave(memory, writes, forget_at, forget_delay)
                assert await memory.wait_idle(10)
                return await readable(memory, store)
            finally:
                await memory.close(grace=1.0)
                await memory.exchanges.close()
                await model.aclose()


async def interleave(
    memory: CompanionMemory, writes: list[Write], forget_at: int, forget_delay: float
) -> None:
    """Start every write and the forget, each after its delay, and let them all finish."""

    async def later(delay: float, call: Callable[[], Awaitable[object]]) -> None:
        """Wait, then make the call."""
        await asyncio.sleep(delay)
        await call()

    tasks = [
        asyncio.create_task(later(write.delay, write_of(memory, write, n)))
        for n, write in enumerate(writes)
    ]
    forget = asyncio.create_task(
        later(forget_delay, lambda: memory.forget(Forget(owner=ALICE.owner, environment="test")))
    )
    tasks.insert(forget_at, forget)
    await asyncio.gather(*tasks)
    for _ in range(3):  # a lasting instruction may still be written after its turn read
        await asyncio.sleep(0)


@dataclass(frozen=True, slots=True)
class Readable:
    """What can be read once everything settled: Alice's with its dates, the outbox, Bob's."""

    forgot_at: datetime
    """When the forget was said (its tombstone's moment)."""
    alices: list[tuple[object, datetime | None]]
    """Each record, current state and graph fact of Alice's still readable, and its date."""
    alices_turns: list[float]
    """When each turn still in Alice's recent window began (a timestamp)."""
    outbox: list[object]
    bobs: set[str]
    """The text of each record of Bob's."""


async def readable(memory: CompanionMemory, store: EmbeddedStore) -> Readable:
    """Return what of Alice's and Bob's can still be read, and when the forget was said."""
    (tombstone,) = memory.ledger.tombstones
    graph = await store.graph.export([ALICE])
    return Readable(
        forgot_at=tombstone.at,
        alices=[
            *((record, record.valid_from) for record in await every_record(store, [ALICE])),
            *((record, record.valid_from) for record in await store.current_states([ALICE])),
            *((item, item.at) for item in (*graph.entities, *graph.relations)),
        ],
        alices_turns=[turn.began for turn in await memory.window(ALICE).turns()],
        outbox=list(await memory.outbox.entries()),
        bobs={record.text for record in await every_record(store, [BOB])},
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    writes=st.lists(WRITES, min_size=1, max_size=8),
    forget_at=st.integers(min_value=0, max_value=8),
    forget_delay=DELAYS,
)
def test_nothing_dated_before_a_forget_is_readable_after_it(
    socket_enabled: None, writes: list[Write], forget_at: int, forget_delay: float
) -> None:
    """Any interleaving of writes, extractions and one forget: the forget wins over the older."""
    # A loop of its own, not set as the thread's: later tests still find theirs.
    seen = asyncio.run(
        scenario(writes, min(forget_at, len(writes)), forget_delay),
        loop_factory=asyncio.new_event_loop,
    )
    dated_before = [(item, at) for item, at in seen.alices if at is None or at <= seen.forgot_at]
    assert dated_before == []
    assert [began for began in seen.alices_turns if began <= seen.forgot_at.timestamp()] == []
    assert seen.outbox == []
    bobs_notes = {f"note {n}" for n, w in enumerate(writes) if w.kind == "remember" and not w.alice}
    assert bobs_notes <= seen.bobs
