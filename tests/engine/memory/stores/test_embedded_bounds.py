"""The embedded store's bounds per scope: details, summaries, retired history, the graph."""

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.memory.embeddings import OpenAIEmbedder
from custom_components.companion_agent.engine.memory.models import (
    GraphFacts,
    MemoryQuery,
    MemoryScope,
    NewMemory,
    Relation,
)
from custom_components.companion_agent.engine.memory.stores.bounds import MemoryBounds
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from tests.engine.memory import ANNA, HOME, every_record, found, superseded
from tests.support.embeddings import SLOW_MACHINE

SMALL = MemoryBounds(details=3, summaries=2, retired_per_topic=2, relations=3, check_every=1)
WORDS = ("apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    """Open a keyword-only embedded store with small bounds, checked at every add."""
    opened = await EmbeddedStore.create(tmp_path / "memory.db", bounds=SMALL)
    yield opened
    await opened.close()


async def add(store: EmbeddedStore, *texts: str, scope: MemoryScope = HOME) -> None:
    """Add detail memories, one add each."""
    for text in texts:
        await store.add([NewMemory(scope=scope, text=text)])


def rows(path: Path, table: str) -> int:
    """Count the rows of ``table`` in the store's file (read beside the store)."""
    with sqlite3.connect(path) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def test_the_oldest_details_go_beyond_the_cap(store: EmbeddedStore) -> None:
    """Test that details beyond the cap go oldest first, their keywords and counts with them."""
    await add(store, *(f"Nova likes the {word}" for word in WORDS))
    assert [r.text for r in await every_record(store, [HOME])] == [
        f"Nova likes the {word}" for word in WORDS[-3:]
    ]
    assert await found(store, "apple") == []
    assert await found(store, "hazel") == ["Nova likes the hazel"]
    assert (await store.count())["detail"] == 3
    assert rows(store.path, "memory_terms") == rows(store.path, "memories") == 3


async def test_current_conclusions_never_go(store: EmbeddedStore) -> None:
    """Test that current states stay however many details come after them."""
    for word in WORDS[:5]:
        await superseded(store, NewMemory(scope=HOME, kind="state", topic=word, text=f"{word} ok"))
    await add(store, *(f"detail {word}" for word in WORDS))
    states = await store.current_states([HOME])
    assert sorted(s.topic or "" for s in states) == sorted(WORDS[:5])
    assert (await store.count())["detail"] == 3


async def test_summaries_have_their_own_cap(store: EmbeddedStore) -> None:
    """Test that summaries are capped apart from details, oldest first."""
    await store.add([NewMemory(scope=HOME, kind="summary", text=f"sum {w}") for w in WORDS[:4]])
    await add(store, "one detail")
    figures = await store.count()
    assert (figures["summary"], figures["detail"]) == (2, 1)
    assert set(await found(store, "sum")) == {"sum cherry", "sum damson"}


async def test_retired_history_is_capped_per_topic(store: EmbeddedStore) -> None:
    """Test that a topic keeps its newest retired versions; rollback walks back within them."""
    made = [
        await superseded(store, NewMemory(scope=HOME, kind="state", topic="drink", text=word))
        for word in WORDS[:6]
    ]
    other = await superseded(store, NewMemory(scope=HOME, kind="state", topic="job", text="cook"))
    await superseded(store, NewMemory(scope=HOME, kind="state", topic="job", text="baker"))
    drink = [r.text for r in await every_record(store, [HOME]) if r.topic == "drink"]
    assert drink == list(WORDS[3:6])
    assert other.id in {r.id for r in await every_record(store, [HOME])}
    figures = await store.count()
    assert (figures["current"], figures["retired"]) == (2, 3)
    restored = await store.rollback(made[5].id)
    assert restored is not None
    assert restored.id == made[4].id
    restored = await store.rollback(made[4].id)
    assert restored is not None
    assert restored.id == made[3].id
    assert await store.rollback(made[3].id) is None, "what it superseded was pruned"


async def test_other_scopes_are_left_alone(store: EmbeddedStore) -> None:
    """Test that pruning one scope leaves the others as they were."""
    await add(store, "Anna likes apple", "Anna likes banana", scope=ANNA)
    await add(store, *(f"Nova likes the {word}" for word in WORDS))
    assert [r.text for r in await every_record(store, [ANNA])] == [
        "Anna likes apple",
        "Anna likes banana",
    ]
    assert await found(store, "apple", ANNA) == ["Anna likes apple"]


async def test_pruning_waits_for_check_every(tmp_path: Path) -> None:
    """Test that the bounds are checked every ``check_every`` adds, not at each one."""
    bounds = MemoryBounds(details=2, check_every=4)
    store = await EmbeddedStore.create(tmp_path / "memory.db", bounds=bounds)
    try:
        await add(store, *WORDS[:3])
        assert (await store.count())["detail"] == 3
        await add(store, WORDS[3])
        assert [r.text for r in await every_record(store, [HOME])] == list(WORDS[2:4])
    finally:
        await store.close()


async def test_vector_search_stays_consistent_after_pruning(
    tmp_path: Path, embedder: OpenAIEmbedder
) -> None:
    """Test that a cached scope's vectors drop the pruned records, and no hit is one."""
    store = await EmbeddedStore.create(
        tmp_path / "memory.db", embedder=embedder, query_timeout=SLOW_MACHINE, bounds=SMALL
    )
    try:
        await add(store, "My cat sleeps on the sofa", "The car needs new tyres", "Tea at five")
        assert await found(store, "Which animal lives with me?")
        await add(store, "Ben plays football", "The dentist is on Friday", "Lily paints")
        kept = {r.id for r in await every_record(store, [HOME])}
        query = MemoryQuery(text="Which animal lives with me?", scopes=(HOME,))
        hits = await store.search(query)
        assert hits
        assert {hit.record.id for hit in hits} <= kept
        assert "My cat sleeps on the sofa" not in [hit.record.text for hit in hits]
        assert store._vectors.size == len(kept), "the pruned vectors left the cache"
    finally:
        await store.close()


async def test_the_graph_keeps_its_newest_relations(store: EmbeddedStore) -> None:
    """Test that relations beyond the cap go least recently updated first, and stray entities."""
    await store.graph.merge(ANNA, GraphFacts(relations=(Relation(subject="Anna",
                            predicate="likes", object="tea"),)))  # fmt: skip
    for word in WORDS[:5]:
        facts = GraphFacts(relations=(Relation(subject="Nova", predicate="knows", object=word),))
        await store.graph.merge(HOME, facts)
    assert (await store.count())["relations"] == 4
    known = {r.object for r in await store.graph.neighbourhood([HOME], ["Nova"], hops=1)}
    assert known == set(WORDS[2:5])
    assert [r.object for r in await store.graph.neighbourhood([ANNA], ["Anna"])] == ["tea"]
    assert rows(store.path, "entities") == 2 + 4, "Nova and the three it still knows stay"
