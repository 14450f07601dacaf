"""The embedded store beyond the contract: its file, its keywords, its vectors."""

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.errors import (
    EmbeddingError,
    MemoryInputError,
    MemoryStoreError,
)
from custom_components.companion_agent.engine.memory.embeddings import (
    EmbeddingSettings,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.models import (
    Forget,
    GraphFacts,
    MemoryQuery,
    MemoryScope,
    NewMemory,
    Relation,
)
from custom_components.companion_agent.engine.memory.stores.inputs import MAX_BATCH
from custom_components.companion_agent.engine.memory.stores.sqlite.schema import SCHEMA_VERSION
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from tests.engine.memory import ANNA, HOME, every_record, found, superseded
from tests.support.embeddings import SLOW_MACHINE
from tests.support.llm_server import LLMServer


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    """Open a keyword-only embedded store in tmp_path."""
    opened = await EmbeddedStore.create(tmp_path / "memory.db")
    yield opened
    await opened.close()


@pytest.fixture
async def vector_store(tmp_path: Path, embedder: OpenAIEmbedder) -> AsyncIterator[EmbeddedStore]:
    """Open an embedded store in tmp_path that ranks by vector alone."""
    opened = await EmbeddedStore.create(
        tmp_path / "memory.db",
        embedder=embedder,
        rankings=frozenset({"vector"}),
        query_timeout=SLOW_MACHINE,
    )
    yield opened
    await opened.close()


async def add(store: EmbeddedStore, *texts: str, scope: MemoryScope = HOME) -> None:
    """Add detail memories."""
    await store.add([NewMemory(scope=scope, text=text) for text in texts])


async def test_one_and_two_character_chinese_queries_find_their_memories_and_no_others(
    store: EmbeddedStore,
) -> None:
    """Test that 猫 and 咖啡 find their memories, and 咖啡 does not find 咖喱."""
    await add(store, "我的猫叫小白", "我喜欢狗", "我每天早上喝咖啡", "晚饭吃咖喱饭")
    assert await found(store, "猫") == ["我的猫叫小白"]
    assert await found(store, "咖啡") == ["我每天早上喝咖啡"]
    assert await found(store, "小白是谁") == ["我的猫叫小白"]
    assert await found(store, "狼") == []


async def test_english_words_fold_case_width_and_endings(store: EmbeddedStore) -> None:
    """Test that case, full-width letters and plural endings do not hide a memory."""
    await add(store, "The WiFi password is on the fridge", "Our cat sleeps a lot")
    assert await found(store, "ＷＩＦＩ") == ["The WiFi password is on the fridge"]
    assert await found(store, "cats") == ["Our cat sleeps a lot"]
    assert await found(store, "Café") == []


async def test_a_memory_mixing_chinese_and_english_is_found_by_either_part(
    store: EmbeddedStore,
) -> None:
    """Test that a memory mixing scripts is found by either part."""
    await add(store, "Anna在Starbucks买了一杯latte", "Ben去了超市")
    assert await found(store, "starbucks") == ["Anna在Starbucks买了一杯latte"]
    assert sorted(await found(store, "latte 超市")) == [
        "Anna在Starbucks买了一杯latte",
        "Ben去了超市",
    ]
    assert await found(store, "一杯") == ["Anna在Starbucks买了一杯latte"]


BOTH = ["Dogs and cats", "Our cat sleeps a lot"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param('cat" OR *', BOTH, id="a quote, OR and a star"),
        pytest.param("NEAR(cat dog)", BOTH, id="NEAR"),
        pytest.param("AND", ["Dogs and cats"], id="AND alone: the word and"),
        pytest.param("-cat", BOTH, id="a minus is no NOT"),
        pytest.param("^cat:x", BOTH, id="a caret and a column filter"),
    ],
)
async def test_fts_syntax_in_a_query_is_only_words(
    store: EmbeddedStore, query: str, expected: list[str]
) -> None:
    """Test that FTS5 operators in a query are searched as words, never parsed."""
    await add(store, "Our cat sleeps a lot", "Dogs and cats")
    assert sorted(await found(store, query)) == expected


async def test_the_better_match_ranks_first(store: EmbeddedStore) -> None:
    """Test BM25: the memory matching more (and rarer) terms comes first."""
    await add(store, "Anna likes tea", "Anna likes green tea from Japan", "Ben likes coffee")
    assert (await found(store, "green tea Japan"))[0] == "Anna likes green tea from Japan"


async def test_records_survive_a_restart(tmp_path: Path) -> None:
    """Test that what was added is there after closing and opening the file again."""
    path = tmp_path / "memory.db"
    first = await EmbeddedStore.create(path)
    await add(first, "我的猫叫小白")
    await superseded(first, NewMemory(scope=HOME, kind="state", topic="t", text="one"))
    await first.close()
    second = await EmbeddedStore.create(path)
    try:
        assert await found(second, "猫") == ["我的猫叫小白"]
        assert [s.text for s in await second.current_states([HOME])] == ["one"]
    finally:
        await second.close()


@pytest.mark.parametrize(
    "content",
    [b"this is not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000],
    ids=["text", "broken header"],
)
async def test_a_file_that_is_no_database_is_moved_aside(tmp_path: Path, content: bytes) -> None:
    """Test that a bad file is moved aside, reported, kept, and a fresh store opens."""
    path = tmp_path / "memory.db"
    path.write_bytes(content)
    reported: list[tuple[Path, Path]] = []
    store = await EmbeddedStore.create(
        path, on_corrupt=lambda bad, moved: reported.append((bad, moved))
    )
    try:
        await add(store, "fresh start")
        assert await found(store, "fresh") == ["fresh start"]
    finally:
        await store.close()
    ((bad, moved),) = reported
    assert bad == path
    assert moved.read_bytes() == content


async def test_a_damaged_store_is_moved_aside(tmp_path: Path) -> None:
    """Test that a store whose pages were overwritten is moved aside, not used."""
    path = tmp_path / "memory.db"
    store = await EmbeddedStore.create(path)
    await add(store, *(f"memory number {n} " * 20 for n in range(200)))
    await store.close()
    data = bytearray(path.read_bytes())
    data[8192:16384] = b"\x5a" * 8192
    path.write_bytes(bytes(data))
    reported: list[Path] = []
    store = await EmbeddedStore.create(path, on_corrupt=lambda bad, moved: reported.append(moved))
    try:
        assert await found(store, "memory") == []
    finally:
        await store.close()
    assert len(reported) == 1


async def test_another_programs_database_is_moved_aside(tmp_path: Path) -> None:
    """Test that a SQLite file of something else is not written into."""
    path = tmp_path / "memory.db"
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE accounts (name TEXT)")
    other.close()
    reported: list[Path] = []
    store = await EmbeddedStore.create(path, on_corrupt=lambda bad, moved: reported.append(moved))
    await store.close()
    (moved,) = reported
    with sqlite3.connect(moved) as kept:
        assert kept.execute("SELECT name FROM sqlite_master").fetchall() == [("accounts",)]
    kept.close()


async def test_a_newer_schema_is_left_alone(tmp_path: Path) -> None:
    """Test that a store written by a newer version is refused and not moved."""
    path = tmp_path / "memory.db"
    with sqlite3.connect(path) as newer:
        newer.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    newer.close()
    with pytest.raises(MemoryStoreError):
        await EmbeddedStore.create(path)
    assert path.exists()
    assert await asyncio.to_thread(lambda: list(tmp_path.iterdir())) == [path]


async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    """Test that calls after close raise MemoryStoreError; closing twice is fine."""
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    await store.close()
    await store.close()
    with pytest.raises(MemoryStoreError):
        await store.count()


async def test_a_batch_is_bounded(store: EmbeddedStore) -> None:
    """Test that one add takes at most MAX_BATCH memories."""
    with pytest.raises(MemoryInputError):
        await add(store, *(["x"] * (MAX_BATCH + 1)))
    assert (await store.count())["current"] == 0


async def test_a_scope_without_a_persona_is_refused(store: EmbeddedStore) -> None:
    """Test that an empty agent_id or owner is a clear error."""
    with pytest.raises(MemoryInputError):
        await add(store, "x", scope=MemoryScope(agent_id=" "))
    with pytest.raises(MemoryInputError):
        await store.search(MemoryQuery(text="x", scopes=(MemoryScope(agent_id="a", owner=""),)))


async def test_forgetting_a_person_forgets_their_graph(store: EmbeddedStore) -> None:
    """Test that the memory store's forget of a person also empties that person's graph."""
    fact = GraphFacts(relations=(Relation(subject="Anna", predicate="owns", object="Mimi"),))
    await store.graph.merge(ANNA, fact)
    await store.graph.merge(HOME, fact)
    await add(store, "Anna owns Mimi", scope=ANNA)
    assert await store.forget(Forget(owner=ANNA.owner)) == 1
    assert await store.graph.neighbourhood([ANNA], ["Anna"]) == []
    assert len(await store.graph.neighbourhood([HOME], ["Anna"])) == 1
    figures = await store.count()
    assert (figures["entities"], figures["relations"]) == (2, 1)


async def test_a_failing_embedder_leaves_keywords_working(
    tmp_path: Path, socket_enabled: None
) -> None:
    """Test that with the embedding server down, adds store no vector and search still works."""
    async with LLMServer() as server:
        url = server.url
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=url, model="m", timeout=1.0))
    store = await EmbeddedStore.create(tmp_path / "memory.db", embedder=embedder)
    try:
        await add(store, "我的猫叫小白")
        assert await found(store, "猫") == ["我的猫叫小白"]
    finally:
        await store.close()
        await embedder.aclose()


async def test_vectors_of_another_model_are_not_compared(
    tmp_path: Path, llm_server: LLMServer, embedder: OpenAIEmbedder
) -> None:
    """Test that a store reopened with another embedder ignores the old model's vectors."""
    path = tmp_path / "memory.db"
    other = OpenAIEmbedder(EmbeddingSettings(base_url=llm_server.url, model="hash-16"))
    first = await EmbeddedStore.create(path, embedder=other)
    await add(first, "The boiler was serviced in March")
    await first.close()
    await other.aclose()
    second = await EmbeddedStore.create(
        path, embedder=embedder, query_timeout=SLOW_MACHINE, backfill=False
    )
    try:
        await add(second, "My tabby cat sleeps on the sofa all day")
        hits = await second.search(MemoryQuery(text="Which animal lives with me?", scopes=(HOME,)))
        assert [h.record.text for h in hits] == ["My tabby cat sleeps on the sofa all day"]
    finally:
        await second.close()


@pytest.mark.parametrize(
    ("memory", "question"),
    [
        ("My tabby cat sleeps on the sofa all day", "Which animal lives with me?"),
        ("我每天早上喝一杯咖啡", "我早餐时的饮料是什么"),
        ("Anna's daughter is called Lily", "安娜的女儿叫什么名字"),
    ],
    ids=["english", "chinese", "cross-lingual"],
)
async def test_vectors_find_a_paraphrase_keywords_miss(
    tmp_path: Path, embedder: OpenAIEmbedder, memory: str, question: str
) -> None:
    """Test the fusion: a paraphrase with no word in common is found through its vector."""
    distractors = ("The dentist appointment is on Friday", "车需要换新轮胎", "Ben plays football")
    keywords = await EmbeddedStore.create(tmp_path / "keywords.db")
    fused = await EmbeddedStore.create(
        tmp_path / "fused.db", embedder=embedder, query_timeout=SLOW_MACHINE
    )
    try:
        for store in (keywords, fused):
            await add(store, *distractors, memory)
        assert await found(keywords, question) == []
        assert (await found(fused, question))[0] == memory
    finally:
        await keywords.close()
        await fused.close()


async def test_a_slow_query_embedding_gives_way_to_keywords(
    tmp_path: Path, silent_port: int
) -> None:
    """Test that a search whose embedding hangs answers by keywords after query_timeout."""
    settings = EmbeddingSettings(base_url=f"http://127.0.0.1:{silent_port}/v1", model="m")
    embedder = OpenAIEmbedder(replace(settings, timeout=0.2))
    store = await EmbeddedStore.create(tmp_path / "memory.db", embedder=embedder)
    store.query_timeout = 0.1
    try:
        await add(store, "我的猫叫小白")
        store.embedder = OpenAIEmbedder(replace(settings, timeout=30.0))
        async with asyncio.timeout(5):
            assert await found(store, "猫") == ["我的猫叫小白"]
        await store.embedder.aclose()
    finally:
        await store.close()
        await embedder.aclose()


async def test_history_search_finds_retired_states_by_vector(vector_store: EmbeddedStore) -> None:
    """Test that include_history reaches superseded records through vectors as well."""
    store = vector_store
    for text in ("Anna drinks green tea", "Anna switched to black coffee"):
        await superseded(store, NewMemory(scope=ANNA, kind="state", topic="drink", text=text))
    query = MemoryQuery(text="What does Anna drink?", scopes=(ANNA,))
    assert [h.record.text for h in await store.search(query)] == ["Anna switched to black coffee"]
    history = await store.search(replace(query, include_history=True))
    assert sorted(h.record.text for h in history) == [
        "Anna drinks green tea",
        "Anna switched to black coffee",
    ]


async def test_rollback_walks_back_one_step_at_a_time(store: EmbeddedStore) -> None:
    """Test that rolling back twice goes back two conclusions."""
    made = [
        await superseded(store, NewMemory(scope=ANNA, kind="state", topic="city", text=city))
        for city in ("Leeds", "York", "Hull")
    ]
    assert (await store.rollback(made[2].id)) == (await every_record(store, [ANNA]))[1]
    restored = await store.rollback(made[1].id)
    assert restored is not None
    assert restored.text == "Leeds"
    assert [s.text for s in await store.current_states([ANNA])] == ["Leeds"]
    assert (await store.count())["retired"] == 2


async def test_sqlite_never_runs_on_the_event_loop_thread(store: EmbeddedStore) -> None:
    """Test that every statement of add, search and forget runs on the worker thread."""
    threads: set[int] = set()
    await store._worker.run(
        lambda db: db.set_trace_callback(lambda sql: threads.add(threading.get_ident()))
    )
    await add(store, "Our cat sleeps a lot")
    await found(store, "cat")
    await store.forget(Forget(agent_id="nova"))
    assert threads
    assert threading.get_ident() not in threads


async def test_a_memory_added_after_a_search_is_found_by_vector(
    vector_store: EmbeddedStore,
) -> None:
    """Test that the vector cache takes in new memories (no stale cache after a search)."""
    store = vector_store
    question = "Which animal lives with me?"
    await add(store, "The dentist appointment is on Friday")
    assert await found(store, question) == ["The dentist appointment is on Friday"]
    await add(store, "My tabby cat sleeps on the sofa all day")
    assert (await found(store, question))[0] == "My tabby cat sleeps on the sofa all day"
    await store.forget(Forget(agent_id="nova"))
    assert await found(store, question) == []


async def test_backfill_gives_vectors_to_memories_stored_without(
    tmp_path: Path, socket_enabled: None, embedder: OpenAIEmbedder
) -> None:
    """Test that memories stored while the embedder was down get vectors later."""
    async with LLMServer() as server:
        url = server.url
    down = OpenAIEmbedder(EmbeddingSettings(base_url=url, model=embedder.model_id, timeout=1.0))
    store = await EmbeddedStore.create(
        tmp_path / "memory.db",
        embedder=down,
        rankings=frozenset({"vector"}),
        query_timeout=SLOW_MACHINE,
        backfill=False,
    )
    question = "Which animal lives with me?"
    try:
        await add(store, "My tabby cat sleeps on the sofa all day")
        with pytest.raises(EmbeddingError):
            await store.backfill_vectors()
        store.embedder = embedder
        assert await found(store, question) == []
        assert await store.backfill_vectors() == 1
        assert await store.backfill_vectors() == 0
        assert await found(store, question) == ["My tabby cat sleeps on the sofa all day"]
    finally:
        await store.close()
        await down.aclose()


async def test_a_forgotten_memory_leaves_no_words_in_the_context_of_the_next(
    tmp_path: Path,
) -> None:
    """The turn after a forgotten one is no longer found by the forgotten one's words.

    A detail is searched with the words of the detail said before it; forgetting that one
    (by id, or by being pruned) takes its words out of the next one's context too, which
    then holds the words of the detail said before the forgotten one, as if it never was.
    """
    path = tmp_path / "memory.db"
    store = await EmbeddedStore.create(path)
    try:
        said = [
            NewMemory(scope=HOME, text=text, source="chat-1")
            for text in ("Shall we paint the shed green?", "My door code is 4711", "ok, noted")
        ]
        stored = await store.add(said)
        assert await found(store, "door code 4711") == ["My door code is 4711", "ok, noted"]
        await store.forget(Forget(record_id=stored[1].id))
        assert await found(store, "door code 4711") == []
        assert await found(store, "paint shed") == [
            "Shall we paint the shed green?",
            "ok, noted",
        ]
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as db:
        contexts = " ".join(str(row[0]) for row in db.execute("SELECT context FROM memory_terms"))
    assert "4711" not in contexts
    assert "door" not in contexts


async def test_forgetting_a_persona_until_a_moment_clears_the_context_of_what_stays(
    tmp_path: Path,
) -> None:
    """What was said after a forget stays, without the forgotten words in its context."""
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    moment = datetime(2026, 5, 8, 12, 0, tzinfo=UTC)
    try:
        await store.add(
            [
                NewMemory(scope=HOME, text="The safe opens with 2580", source="chat-1",
                          at=moment - timedelta(minutes=1)),
                NewMemory(scope=HOME, text="thanks, got it", source="chat-1",
                          at=moment + timedelta(minutes=1)),
            ]
        )  # fmt: skip
        await store.forget(Forget(agent_id=HOME.agent_id, at=moment))
        assert await found(store, "safe 2580") == []
        assert await found(store, "thanks") == ["thanks, got it"]
    finally:
        await store.close()
