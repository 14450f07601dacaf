"""Memory around a turn: what it adds before the answer, and what a durable write costs.

Run: ``.venv/bin/python benchmarks/memory_tiers.py [--records N] [--turns N]``. On a real
SQLite store holding ``--records`` memories (keywords only, no embedder):

- **before the turn**: ``CompanionMemory.before_turn`` (conclusions, details and the graph
  read at once, then rendered as quoted data) p50/p95; the retrieval budget is 300 ms, the
  target p95 ≤ 50 ms so the budget is rarely what ends it;
- **lasting instruction**: the same call for "from now on…", which also writes the
  conclusion before returning; target p95 ≤ 100 ms;
- **outbox put**: one durable entry (SQLite, ``synchronous=FULL``: on disk when it returns);
  target p95 ≤ 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.figures import report_p95
from custom_components.companion_agent.engine.memory.companion import (
    CompanionMemory,
    MemorySettings,
)
from custom_components.companion_agent.engine.memory.models import MemoryScope, NewMemory
from custom_components.companion_agent.engine.memory.outbox.outbox import MemoryOutbox
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from custom_components.companion_agent.engine.turn.exchanges import ExchangeStore

SCOPE = MemoryScope(agent_id="bench", owner="user:alice", environment="test")
TOPICS = ("coffee", "tea", "music", "garden", "car", "bins", "school", "doctor")


async def fill(store: EmbeddedStore, records: int) -> None:
    """Store ``records`` details and a conclusion per topic."""
    batch = [
        NewMemory(scope=SCOPE, text=f"Note {i} about {TOPICS[i % len(TOPICS)]} and day {i % 31}")
        for i in range(records)
    ]
    for start in range(0, len(batch), 500):
        await store.add(batch[start : start + 500])
    for topic in TOPICS:
        await store.supersede(
            NewMemory(scope=SCOPE, text=f"Alice likes {topic}.", kind="state", topic=topic)
        )


async def timed(call: Callable[[int], Awaitable[object]], runs: int) -> list[float]:
    """Return the milliseconds of ``runs`` awaits of ``call()``."""
    samples = []
    for index in range(runs):
        start = time.perf_counter()
        await call(index)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def main(records: int, turns: int) -> bool:
    """Print the figures; return whether every target was met."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        store = await EmbeddedStore.create(root / "memory.db")
        await fill(store, records)
        memory = CompanionMemory(
            store,
            MemoryOutbox(root / "outbox.db"),
            exchanges=ExchangeStore(root / "exchanges.db"),
            answers_for=lambda _name: None,
            graph=store.graph,
            settings=MemorySettings(environment="test"),
        )
        print(f"memory around a turn, {records} records")
        before = await timed(
            lambda i: memory.before_turn(SCOPE, f"What about {TOPICS[i % 8]} on day {i % 31}?"),
            turns,
        )
        ok = report_p95("read", before, 50, unit="turns", figure="memory read before a turn")
        instruction = await timed(
            lambda i: memory.before_turn(SCOPE, f"From now on, call me Captain {i}."), turns
        )
        ok &= report_p95("instr", instruction, 100, unit="turns", figure="lasting instruction")
        puts = await timed(lambda i: memory.outbox.put("exchange", {"user": f"turn {i}"}), turns)
        ok &= report_p95("put", puts, 20, unit="entries", figure="durable outbox entry")
        await memory.outbox.close()
        await memory.exchanges.close()
        await store.close()
    return ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    sys.exit(0 if asyncio.run(main(args.records, args.turns)) else 1)
