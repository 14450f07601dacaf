"""The GraphStore contract: every backend in ``backends.GRAPH_BACKENDS`` passes these."""

import pytest

from custom_components.companion_agent.engine.errors import MemoryInputError
from custom_components.companion_agent.engine.memory.models import (
    Forget,
    GraphFacts,
    GraphStore,
    MemoryScope,
    Relation,
)
from custom_components.companion_agent.engine.memory.provenance import Provenance
from custom_components.companion_agent.engine.memory.stores.inputs import MAX_STATEMENTS
from tests.engine.memory import ANNA, BEN, HOME

OTHER_PERSONA = MemoryScope.for_turn("sage", "anna")

CHAIN = GraphFacts(
    relations=(
        Relation(subject="Anna", predicate="owns", object="Mimi"),
        Relation(subject="Mimi", predicate="is a", object="cat"),
        Relation(subject="cat", predicate="eats", object="fish"),
    ),
    source="c1",
)


def triples(relations: list[Relation]) -> set[tuple[str, str, str]]:
    """Return relations as comparable triples."""
    return {(r.subject, r.predicate, r.object) for r in relations}


async def test_neighbourhood_walks_two_hops_by_default(graph_store: GraphStore) -> None:
    """Test that relations one and two hops away come back, three hops away do not."""
    await graph_store.merge(ANNA, CHAIN)
    found = await graph_store.neighbourhood(ANNA.readable(), ["Anna"])
    assert triples(found) == {("Anna", "owns", "Mimi"), ("Mimi", "is a", "cat")}
    one = await graph_store.neighbourhood(ANNA.readable(), ["Anna"], hops=1)
    assert triples(one) == {("Anna", "owns", "Mimi")}
    assert found[0] == Relation(subject="Anna", predicate="owns", object="Mimi"), "nearest first"


async def test_merge_is_idempotent_and_names_are_normalised(graph_store: GraphStore) -> None:
    """Test that merging the same facts again, spelt differently, adds no relation."""
    await graph_store.merge(ANNA, CHAIN)
    await graph_store.merge(
        ANNA,
        GraphFacts(
            relations=(
                Relation(subject=" anna ", predicate="OWNS", object="ＭＩＭＩ"),
                Relation(subject="Mimi", predicate="is  a", object="Cat"),
            )
        ),
    )
    found = await graph_store.neighbourhood(ANNA.readable(), ["ANNA"], hops=3)
    assert triples(found) == {
        ("Anna", "owns", "Mimi"),
        ("Mimi", "is a", "cat"),
        ("cat", "eats", "fish"),
    }


async def test_graphs_keep_to_their_scopes(graph_store: GraphStore) -> None:
    """Test that Ben and another persona never reach Anna's graph; the household is shared."""
    await graph_store.merge(ANNA, CHAIN)
    await graph_store.merge(
        HOME,
        GraphFacts(relations=(Relation(subject="Mimi", predicate="sleeps in", object="hall"),)),
    )
    assert await graph_store.neighbourhood(OTHER_PERSONA.readable(), ["Anna", "Mimi"]) == []
    assert triples(await graph_store.neighbourhood(BEN.readable(), ["Anna", "Mimi"])) == {
        ("Mimi", "sleeps in", "hall")
    }
    assert ("Mimi", "sleeps in", "hall") in triples(
        await graph_store.neighbourhood(ANNA.readable(), ["Anna"])
    )


async def test_neighbourhood_is_bounded(graph_store: GraphStore) -> None:
    """Test that a neighbourhood returns at most ``limit`` relations."""
    await graph_store.merge(
        HOME,
        GraphFacts(
            relations=tuple(
                Relation(subject="house", predicate="has", object=f"room {n}") for n in range(40)
            )
        ),
    )
    assert len(await graph_store.neighbourhood([HOME], ["house"], limit=5)) == 5
    assert len(await graph_store.neighbourhood([HOME], ["house"])) == 20
    assert await graph_store.neighbourhood([HOME], []) == []
    assert await graph_store.neighbourhood([HOME], ["nobody"]) == []


async def test_forgetting_a_person_removes_their_relations_and_leaves_the_households(
    graph_store: GraphStore,
) -> None:
    """Test that forgetting Anna removes her relations and leaves the household's."""
    await graph_store.merge(ANNA, CHAIN)
    await graph_store.merge(
        HOME,
        GraphFacts(relations=(Relation(subject="Mimi", predicate="sleeps in", object="hall"),)),
    )
    assert await graph_store.forget(Forget(owner=ANNA.owner)) == 3
    assert triples(await graph_store.neighbourhood(ANNA.readable(), ["Anna", "Mimi"])) == {
        ("Mimi", "sleeps in", "hall")
    }


async def test_forget_names_one_thing(graph_store: GraphStore) -> None:
    """Test that a Forget naming a record and a person, or nothing, is refused."""
    with pytest.raises(MemoryInputError):
        await graph_store.forget(Forget(record_id="rel-x", owner="user:anna"))
    with pytest.raises(MemoryInputError):
        await graph_store.forget(Forget())


async def test_empty_names_and_relations_are_dropped(graph_store: GraphStore) -> None:
    """Test that a relation with an empty or blank part is not stored."""
    await graph_store.merge(
        HOME,
        GraphFacts(
            entities=("", "  "),
            relations=(
                Relation(subject=" ", predicate="is", object="x"),
                Relation(subject="door", predicate="", object="red"),
                Relation(subject="door", predicate="is", object="red \ud800"),
            ),
        ),
    )
    assert triples(await graph_store.neighbourhood([HOME], ["door", "x"])) == {
        ("door", "is", "red \ufffd")
    }


def said_by(statement: str, *relations: tuple[str, str, str]) -> GraphFacts:
    """Return the facts one statement said: relations and the entities they name."""
    found = tuple(Relation(subject=s, predicate=p, object=o) for s, p, o in relations)
    return GraphFacts(relations=found, provenance=Provenance(via="turn", statement=statement))


def said(statement: str) -> Forget:
    """Return the forget of what ``statement`` said in Anna's graph."""
    return Forget(statement=statement, agent_id=ANNA.agent_id, owner=ANNA.owner)


async def test_forget_a_statement_takes_what_no_other_statement_said(
    graph_store: GraphStore,
) -> None:
    """Test that forgetting a statement deletes its relation and the entity only it named;
    an entity, or a relation, another statement also said stays (and Ben's graph too)."""
    await graph_store.merge(ANNA, said_by("s1", ("bike lock", "has colour", "red")))
    await graph_store.merge(ANNA, said_by("s2", ("bike lock", "has code", "5150")))
    await graph_store.merge(ANNA, said_by("s3", ("Anna", "owns", "bike lock")))
    await graph_store.merge(ANNA, said_by("s4", ("Anna", "owns", "bike lock")))
    await graph_store.merge(BEN, said_by("s2", ("bike lock", "has code", "5150")))
    assert await graph_store.forget(said("s2")) == 1
    assert await graph_store.forget(said("s3")) == 0  # s4 said it too
    page = await graph_store.export([ANNA])
    assert sorted(item.name for item in page.entities) == ["Anna", "bike lock", "red"]
    assert triples(await graph_store.neighbourhood([ANNA], ["bike lock"])) == {
        ("bike lock", "has colour", "red"),
        ("Anna", "owns", "bike lock"),
    }
    assert triples(await graph_store.neighbourhood([BEN], ["bike lock"])) == {
        ("bike lock", "has code", "5150")
    }
    assert await graph_store.forget(said("s4")) == 1
    assert await graph_store.forget(said("s1")) == 1
    page = await graph_store.export([ANNA])
    assert (page.entities, page.relations) == ((), ())


async def test_forget_a_statement_keeps_a_fact_said_by_more_than_it_lists(
    graph_store: GraphStore,
) -> None:
    """Test that a relation said by more statements than are listed outlives them all."""
    for n in range(MAX_STATEMENTS + 1):
        await graph_store.merge(ANNA, said_by(f"s{n}", ("Anna", "likes", "tea")))
    for n in range(MAX_STATEMENTS + 1):
        assert await graph_store.forget(said(f"s{n}")) == 0
    assert triples(await graph_store.neighbourhood([ANNA], ["Anna"])) == {("Anna", "likes", "tea")}


async def test_forget_a_statement_names_its_scope(graph_store: GraphStore) -> None:
    """Test that a statement's forget without its person and persona is refused."""
    with pytest.raises(MemoryInputError):
        await graph_store.forget(Forget(statement="s1", owner=ANNA.owner))
    with pytest.raises(MemoryInputError):
        await graph_store.forget(Forget(statement="s1", record_id="rel-x"))
