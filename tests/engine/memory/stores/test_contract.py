"""The MemoryStore contract: every backend in ``backends.MEMORY_BACKENDS`` passes these."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from custom_components.companion_agent.engine.errors import MemoryInputError
from custom_components.companion_agent.engine.memory.models import (
    MAX_LIMIT,
    MAX_TEXT_CHARS,
    Forget,
    MemoryQuery,
    MemoryScope,
    MemoryStore,
    NewMemory,
)
from custom_components.companion_agent.engine.memory.provenance import Provenance
from tests.engine.memory import ANNA, BEN, HOME, every_record, superseded

OTHER_PERSONA = MemoryScope.for_turn("sage", "anna")
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


async def texts(store: MemoryStore, text: str, scope: MemoryScope, **kw: object) -> list[str]:
    """Return the texts a turn in ``scope`` finds for ``text``."""
    query = MemoryQuery(text=text, scopes=scope.readable(), **kw)  # type: ignore[arg-type]
    return [hit.record.text for hit in await store.search(query)]


async def test_added_records_come_back_current_with_their_scope(memory_store: MemoryStore) -> None:
    """Test that add returns one current record per memory, in order, in its scope."""
    records = await memory_store.add(
        [
            NewMemory(scope=ANNA, text="Anna's cat is called Mimi", source="c1", at=T0),
            NewMemory(scope=HOME, text="The bins go out on Tuesday", source="c1"),
        ]
    )
    assert [r.text for r in records] == ["Anna's cat is called Mimi", "The bins go out on Tuesday"]
    assert [r.scope for r in records] == [ANNA, HOME]
    assert all(r.current and r.kind == "detail" and r.source == "c1" for r in records)
    assert records[0].valid_from == T0
    assert len({r.id for r in records}) == 2
    assert "Anna's cat is called Mimi" in await texts(memory_store, "cat", ANNA)


async def test_a_persona_never_sees_another_personas_memories(memory_store: MemoryStore) -> None:
    """Test that two personas sharing a store and a person stay apart."""
    await memory_store.add([NewMemory(scope=ANNA, text="Anna's cat is called Mimi")])
    await memory_store.add([NewMemory(scope=OTHER_PERSONA, text="Anna's dog is called Rex")])
    assert await texts(memory_store, "Anna cat dog called", ANNA) == ["Anna's cat is called Mimi"]
    assert await texts(memory_store, "Anna cat dog called", OTHER_PERSONA) == [
        "Anna's dog is called Rex"
    ]


async def test_a_persons_memories_stay_theirs_and_the_household_is_shared(
    memory_store: MemoryStore,
) -> None:
    """Test that Ben's turn never sees Anna's private memories; both see the household's."""
    await memory_store.add(
        [
            NewMemory(scope=ANNA, text="Anna's birthday present is a red bicycle"),
            NewMemory(scope=HOME, text="The bicycle pump is in the garage"),
        ]
    )
    assert sorted(await texts(memory_store, "bicycle", ANNA)) == [
        "Anna's birthday present is a red bicycle",
        "The bicycle pump is in the garage",
    ]
    assert await texts(memory_store, "bicycle", BEN) == ["The bicycle pump is in the garage"]
    assert await texts(memory_store, "bicycle", HOME) == ["The bicycle pump is in the garage"]


async def test_environments_never_meet(memory_store: MemoryStore) -> None:
    """Test that a test environment's memories stay out of production and back."""
    test_scope = MemoryScope.for_turn("nova", "anna", environment="test")
    await memory_store.add([NewMemory(scope=test_scope, text="The test password is swordfish")])
    assert await texts(memory_store, "password swordfish", ANNA) == []
    assert await texts(memory_store, "password swordfish", test_scope) == [
        "The test password is swordfish"
    ]


async def test_supersede_retires_the_old_state_and_keeps_it(memory_store: MemoryStore) -> None:
    """Test the state channel: a newer conclusion wins, the old one is kept with its end."""
    old = await superseded(
        memory_store,
        NewMemory(scope=ANNA, kind="state", topic="favourite drink", text="Anna drinks tea", at=T0),
    )
    new = await superseded(
        memory_store,
        NewMemory(
            scope=ANNA,
            kind="state",
            topic="Favourite  Drink",
            text="Anna drinks coffee now",
            at=T0 + timedelta(days=3),
        ),
    )
    states = await memory_store.current_states(ANNA.readable())
    assert [s.id for s in states] == [new.id]
    assert "Anna drinks tea" not in await texts(memory_store, "Anna drinks tea", ANNA)
    history = {r.id: r for r in await every_record(memory_store, [ANNA])}
    assert history[old.id].valid_until is not None
    assert history[old.id].superseded_by == new.id
    assert not history[old.id].current
    assert history[new.id].current
    everything = await texts(memory_store, "Anna drinks tea", ANNA, include_history=True)
    assert "Anna drinks tea" in everything


async def test_a_state_on_the_same_topic_in_another_scope_is_left_alone(
    memory_store: MemoryStore,
) -> None:
    """Test that superseding is per scope: Ben's conclusion does not retire Anna's."""
    await superseded(
        memory_store, NewMemory(scope=ANNA, kind="state", topic="wake time", text="Anna wakes at 7")
    )
    await superseded(
        memory_store, NewMemory(scope=BEN, kind="state", topic="wake time", text="Ben wakes at 6")
    )
    assert [s.text for s in await memory_store.current_states(ANNA.readable())] == [
        "Anna wakes at 7"
    ]
    assert [s.text for s in await memory_store.current_states(BEN.readable())] == ["Ben wakes at 6"]


async def test_rollback_brings_the_superseded_state_back(memory_store: MemoryStore) -> None:
    """Test that rolling back a wrong conclusion makes the one before it current again."""
    tea = await superseded(
        memory_store,
        NewMemory(scope=ANNA, kind="state", topic="drink", text="Anna drinks tea", at=T0),
    )
    wrong = await superseded(
        memory_store, NewMemory(scope=ANNA, kind="state", topic="drink", text="Anna drinks vodka")
    )
    restored = await memory_store.rollback(wrong.id)
    assert restored is not None
    assert restored.id == tea.id
    assert restored.current
    assert restored.superseded_by is None
    assert [s.id for s in await memory_store.current_states([ANNA])] == [tea.id]
    assert "Anna drinks vodka" not in await texts(memory_store, "Anna drinks vodka", ANNA)
    assert await memory_store.rollback(wrong.id) is None, "a retired record rolls back once"


async def test_rollback_of_what_is_no_state_changes_nothing(memory_store: MemoryStore) -> None:
    """Test that rolling back an unknown id or a detail returns None and keeps the record."""
    (detail,) = await memory_store.add([NewMemory(scope=ANNA, text="Anna likes jazz")])
    assert await memory_store.rollback("no-such-id") is None
    assert await memory_store.rollback(detail.id) is None
    assert await texts(memory_store, "jazz", ANNA) == ["Anna likes jazz"]


async def test_supersede_needs_a_state_with_a_topic(memory_store: MemoryStore) -> None:
    """Test that a state without a topic is refused with a clear error."""
    with pytest.raises(MemoryInputError):
        await superseded(memory_store, NewMemory(scope=ANNA, kind="state", text="Anna is tired"))
    with pytest.raises(MemoryInputError):
        await superseded(memory_store, NewMemory(scope=ANNA, topic="mood", text="Anna is tired"))


async def test_forget_a_record_takes_its_history(memory_store: MemoryStore) -> None:
    """Test that forgetting a state forgets the states it superseded too."""
    await superseded(memory_store, NewMemory(scope=ANNA, kind="state", topic="job", text="nurse"))
    doctor = await superseded(
        memory_store, NewMemory(scope=ANNA, kind="state", topic="job", text="doctor")
    )
    await memory_store.add([NewMemory(scope=ANNA, text="Anna plays the cello")])
    assert await memory_store.forget(Forget(record_id=doctor.id)) == 2
    assert [r.text for r in await every_record(memory_store, [ANNA])] == ["Anna plays the cello"]


async def test_forget_a_record_of_another_environment_changes_nothing(
    memory_store: MemoryStore,
) -> None:
    """Test that a record id forgotten in the wrong environment is left, history and all."""
    tea = await superseded(
        memory_store, NewMemory(scope=ANNA, kind="state", topic="drink", text="Anna drinks tea")
    )
    coffee = await superseded(
        memory_store, NewMemory(scope=ANNA, kind="state", topic="drink", text="Anna drinks coffee")
    )
    assert await memory_store.forget(Forget(record_id=tea.id, environment="test")) == 0
    restored = await memory_store.rollback(coffee.id)
    assert restored is not None
    assert restored.id == tea.id


async def test_rollback_keeps_to_its_environment(memory_store: MemoryStore) -> None:
    """Test that a rollback in one environment never touches a record of another."""
    trial = MemoryScope.for_turn("nova", "anna", environment="test")
    for scope in (ANNA, trial):
        await superseded(
            memory_store,
            NewMemory(scope=scope, kind="state", topic="drink", text="Anna drinks tea", at=T0),
        )
    coffee = await superseded(
        memory_store, NewMemory(scope=ANNA, kind="state", topic="drink", text="Anna drinks coffee")
    )
    juice = await superseded(
        memory_store, NewMemory(scope=trial, kind="state", topic="drink", text="Anna drinks juice")
    )
    assert await memory_store.rollback(coffee.id, "test") is None
    assert await memory_store.rollback(juice.id) is None, "production is the default"
    assert [s.id for s in await memory_store.current_states([ANNA])] == [coffee.id]
    assert [s.id for s in await memory_store.current_states([trial])] == [juice.id]
    restored = await memory_store.rollback(juice.id, "test")
    assert restored is not None
    assert restored.scope == trial


async def test_forget_a_person_keeps_the_household_and_others(memory_store: MemoryStore) -> None:
    """Test that forgetting Anna removes all of hers, in every persona, and nothing else."""
    await memory_store.add(
        [
            NewMemory(scope=ANNA, text="Anna likes jazz"),
            NewMemory(scope=OTHER_PERSONA, text="Anna likes chess"),
            NewMemory(scope=BEN, text="Ben likes jazz"),
            NewMemory(scope=HOME, text="The piano is tuned in May"),
        ]
    )
    assert await memory_store.forget(Forget(owner=ANNA.owner)) == 2
    assert await every_record(memory_store, [ANNA, OTHER_PERSONA]) == []
    assert [r.text for r in await every_record(memory_store, [BEN, HOME])] == [
        "Ben likes jazz",
        "The piano is tuned in May",
    ]


async def test_forgetting_a_persona_takes_only_that_persona_in_the_environment_named(
    memory_store: MemoryStore,
) -> None:
    """Test that forgetting a persona takes only that persona, in the environment named."""
    test_scope = MemoryScope.for_turn("nova", "anna", environment="test")
    await memory_store.add(
        [
            NewMemory(scope=ANNA, text="Anna likes jazz"),
            NewMemory(scope=HOME, text="The piano is tuned in May"),
            NewMemory(scope=OTHER_PERSONA, text="Anna likes chess"),
            NewMemory(scope=test_scope, text="A test memory"),
        ]
    )
    assert await memory_store.forget(Forget(agent_id="nova", environment="test")) == 1
    assert await memory_store.forget(Forget(agent_id="nova")) == 2
    assert [r.text for r in await every_record(memory_store, [ANNA, HOME, OTHER_PERSONA])] == [
        "Anna likes chess"
    ]


def said_in(statement: str, scope: MemoryScope = ANNA, **kw: object) -> NewMemory:
    """Return a memory derived from ``statement`` (a turn's), in ``scope``."""
    origin = Provenance(via="turn", conversation="c1", statement=statement)
    return NewMemory(scope=scope, provenance=origin, **kw)  # type: ignore[arg-type]


async def test_forget_a_statement_takes_what_was_derived_from_it(
    memory_store: MemoryStore,
) -> None:
    """Test that a statement's forget deletes its records, each alone, as if never said: the
    conclusion it superseded holds again; other statements' and other scopes' records stay."""
    tea = await superseded(
        memory_store, said_in("s0", kind="state", topic="drink", text="Anna drinks tea")
    )
    await memory_store.add(
        [
            said_in("s1", text="Anna's locker code is 7788"),
            said_in("s1", kind="state", topic="drink", text="Anna drinks coffee"),
            said_in("s2", text="Anna's locker is blue"),
            said_in("s1", BEN, text="Ben's locker code is 1234"),
        ]
    )
    forget = Forget(statement="s1", agent_id=ANNA.agent_id, owner=ANNA.owner)
    assert await memory_store.forget(forget) == 2
    left = {r.text: r for r in await every_record(memory_store, [ANNA, BEN])}
    assert sorted(left) == ["Anna drinks tea", "Anna's locker is blue", "Ben's locker code is 1234"]
    assert left["Anna's locker is blue"].provenance.statement == "s2"
    assert [(r.id, r.current) for r in await memory_store.current_states([ANNA])] == [
        (tea.id, True)
    ]


async def test_a_turns_record_without_a_statement_gets_its_legacy_one(
    memory_store: MemoryStore,
) -> None:
    """Test that a turn's record written without a statement is given its conversation and
    time as one, so what one exchange left is forgotten together."""
    origin = Provenance(via="turn", conversation="c7")
    both = [NewMemory(scope=ANNA, text=text, at=T0, provenance=origin) for text in ("a", "b")]
    (one, _) = await memory_store.add(both)
    assert one.provenance.statement == f"legacy:c7@{T0.isoformat(timespec='microseconds')}"
    forget = Forget(statement=one.provenance.statement, agent_id="nova", owner=ANNA.owner)
    assert await memory_store.forget(forget) == 2


@pytest.mark.parametrize(
    "what",
    [
        Forget(),
        Forget(record_id="x", owner="user:anna"),
        Forget(record_id=""),
        Forget(owner="", agent_id="nova"),
        Forget(record_id="x", statement="s1"),
        Forget(statement="s1", owner="user:anna"),
        Forget(statement="", owner="user:anna", agent_id="nova"),
    ],
    ids=["nothing", "a-record-and-a-person", "empty", "empty-owner", "a-record-and-a-statement",
         "a-statement-without-its-persona", "an-empty-statement"],
)  # fmt: skip
async def test_forget_names_one_thing(memory_store: MemoryStore, what: Forget) -> None:
    """Test that a Forget naming nothing, an empty one, or a record and more is refused."""
    with pytest.raises(MemoryInputError):
        await memory_store.forget(what)


async def test_a_person_and_a_persona_together_forget_that_persons_memories_of_it_only(
    memory_store: MemoryStore,
) -> None:
    """Test that a person and a persona together forget that person's memories of it only."""
    elsewhere = MemoryScope(agent_id="other", owner=ANNA.owner, environment=ANNA.environment)
    await memory_store.add([NewMemory(scope=ANNA, text="Anna likes chess")])
    await memory_store.add([NewMemory(scope=elsewhere, text="Anna likes go")])
    await memory_store.add([NewMemory(scope=BEN, text="Ben likes chess")])
    assert await memory_store.forget(Forget(owner=ANNA.owner, agent_id="nova")) == 1
    assert await every_record(memory_store, [ANNA]) == []
    assert [r.text for r in await every_record(memory_store, [elsewhere, BEN])] == [
        "Anna likes go",
        "Ben likes chess",
    ]


async def test_export_is_every_record_oldest_first(memory_store: MemoryStore) -> None:
    """Test that export returns current and retired records of exactly the scopes given."""
    await memory_store.add([NewMemory(scope=ANNA, text="first")])
    await superseded(memory_store, NewMemory(scope=ANNA, kind="state", topic="t", text="second"))
    await superseded(memory_store, NewMemory(scope=ANNA, kind="state", topic="t", text="third"))
    await memory_store.add([NewMemory(scope=HOME, text="household")])
    exported = await every_record(memory_store, [ANNA])
    assert [r.text for r in exported] == ["first", "second", "third"]
    assert [r.current for r in exported] == [True, False, True]


async def test_count_gives_figures_by_kind_and_validity(memory_store: MemoryStore) -> None:
    """Test that count reports kinds and current/retired, never content."""
    await memory_store.add(
        [
            NewMemory(scope=ANNA, text="a detail"),
            NewMemory(scope=ANNA, kind="summary", text="a summary of a session"),
        ]
    )
    await superseded(memory_store, NewMemory(scope=ANNA, kind="state", topic="t", text="one"))
    await superseded(memory_store, NewMemory(scope=ANNA, kind="state", topic="t", text="two"))
    figures = await memory_store.count()
    assert {k: figures[k] for k in ("detail", "state", "summary", "current", "retired")} == {
        "detail": 1,
        "state": 2,
        "summary": 1,
        "current": 3,
        "retired": 1,
    }


async def test_search_keeps_to_the_kinds_asked_for(memory_store: MemoryStore) -> None:
    """Test that ``kinds`` filters the hits."""
    await memory_store.add(
        [
            NewMemory(scope=ANNA, text="Anna went hiking in Wales"),
            NewMemory(scope=ANNA, kind="summary", text="Session: Anna talked about hiking"),
        ]
    )
    hits = await memory_store.search(
        MemoryQuery(text="hiking", scopes=ANNA.readable(), kinds=frozenset({"summary"}))
    )
    assert [(h.record.kind, h.channel) for h in hits] == [("summary", "summary")]


async def test_search_is_bounded_and_best_first(memory_store: MemoryStore) -> None:
    """Test that a search returns at most ``limit`` (clamped to MAX_LIMIT), scores falling."""
    await memory_store.add(
        [NewMemory(scope=HOME, text=f"Reminder {n}: water the plants") for n in range(60)]
    )
    hits = await memory_store.search(MemoryQuery(text="water plants", scopes=(HOME,), limit=500))
    assert len(hits) == MAX_LIMIT
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    few = await memory_store.search(MemoryQuery(text="water plants", scopes=(HOME,), limit=0))
    assert len(few) == 1


async def test_text_is_made_valid_and_bounded(memory_store: MemoryStore) -> None:
    """Test that lone surrogates become U+FFFD and long text is cut to MAX_TEXT_CHARS."""
    (broken, long) = await memory_store.add(
        [
            NewMemory(scope=ANNA, text="Anna said \ud83d hello"),
            NewMemory(scope=ANNA, text="word " * 1000),
        ]
    )
    assert broken.text == "Anna said \ufffd hello"
    assert 0 < len(long.text) <= MAX_TEXT_CHARS
    exported = await every_record(memory_store, [ANNA])
    assert [r.text for r in exported] == [broken.text, long.text]


@pytest.mark.parametrize("text", ["", "   \n"])
async def test_a_memory_without_text_is_refused(memory_store: MemoryStore, text: str) -> None:
    """Test that empty memories are refused and nothing is stored."""
    with pytest.raises(MemoryInputError):
        await memory_store.add([NewMemory(scope=ANNA, text="ok"), NewMemory(scope=ANNA, text=text)])
    assert await every_record(memory_store, [ANNA]) == []


async def test_an_empty_query_finds_nothing(memory_store: MemoryStore) -> None:
    """Test that a query of no words, or of no scopes, returns no hits and no error."""
    await memory_store.add([NewMemory(scope=ANNA, text="Anna likes jazz")])
    assert await memory_store.search(MemoryQuery(text=" ?! ", scopes=ANNA.readable())) == []
    assert await memory_store.search(MemoryQuery(text="jazz", scopes=())) == []


async def test_concurrent_adds_and_searches_all_land(memory_store: MemoryStore) -> None:
    """Test that many concurrent adds and searches neither fail nor lose a record."""

    async def add(n: int) -> None:
        """Add one memory."""
        await memory_store.add([NewMemory(scope=HOME, text=f"Parcel {n} arrived at the door")])

    async def search() -> None:
        """Search while others write."""
        await memory_store.search(MemoryQuery(text="parcel door", scopes=(HOME,)))

    await asyncio.gather(*(add(n) for n in range(40)), *(search() for _ in range(40)))
    assert len(await every_record(memory_store, [HOME])) == 40
