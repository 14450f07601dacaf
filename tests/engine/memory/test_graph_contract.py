"""The GraphStore contract: every backend in ``backends.GRAPH_BACKENDS`` passes these."""

import pytest

from custom_components.companion_agent.engine.errors import MemoryInputError
from custom_components.companion_agent.engine.memory.types import (
    Forget,
    GraphFacts,
    GraphStore,
    MemoryScope,
    Relation,
)
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


async def test_forget_a_persons_graph(graph_store: GraphStore) -> None:
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
