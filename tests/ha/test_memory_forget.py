"""Forget does forget, through a real HA, on every backend: the embedded store, mem0 on a
local Qdrant, and the graph on FalkorDB's Bolt listener (through the neo4j driver).

Each test is one defect of issue 16: a forget while the memory model is still extracting, a
forget while the turn is still being answered, the graph missing from export and from
forget by id, and a persona sub-entry removed with its memories left behind; and of issue
31: forgetting one memory left what its statement derived (another fact, a conclusion, an
entity, a relation), and a forget by id lost to the extraction of its statement in flight.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

import pytest
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.engine.memory import MemoryScope
from tests.ha.common import (
    SetupCompanion,
    add_person,
    agents_by_title,
    ask,
    call,
    memory_of,
    persona,
    rows,
    settled,
    stored_conversations,
    stored_turns,
)
from tests.support.chat_requests import all_messages, last_user_message
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer

EXTRACTED = json.dumps(
    {
        "facts": ["Alice's front door code is 4711."],
        "conclusions": [
            {"subject": "front door", "attribute": "code", "conclusion": "The code is 4711."}
        ],
        "entities": ["front door"],
        "relations": [{"subject": "front door", "predicate": "has code", "object": "4711"}],
    }
)
BACKENDS = ("embedded", "mem0", "falkordb")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, llm_server: LLMServer) -> Mapping[str, object]:
    """Return the memory options of each backend in turn (FalkorDB: the graph on it)."""
    match request.param:
        case "mem0":
            return {
                "memory_backend": "mem0",
                "embeddings_model": "test-embed",
                "embeddings_url": llm_server.url,
            }
        case "falkordb":
            return {"memory_neo4j": True, "neo4j_uri": request.getfixturevalue("falkordb")}
        case _:
            return {}


async def alice_with(
    hass: HomeAssistant, setup_companion: SetupCompanion, options: Mapping[str, object]
) -> tuple[MockConfigEntry, str, str, str]:
    """Set up Ada on ``options``; return the entry, Ada's agent, Alice's user and person."""
    entry = await setup_companion(persona("Ada"), options=options)
    user, person = await add_person(hass, "Alice")
    return entry, agents_by_title(hass, entry)["Ada"], user, person


async def nothing_of(hass: HomeAssistant, agent: str, person: str) -> None:
    """Assert the export of ``person`` with ``agent`` holds no memory, entity or relation."""
    exported = await call(hass, "export_memories", {"persona": agent, "person": person})
    assert (exported["memories"], exported["entities"], exported["relations"]) == ([], [], [])


@pytest.fixture
async def alice(
    hass: HomeAssistant, setup_companion: SetupCompanion, backend: Mapping[str, object]
) -> tuple[MockConfigEntry, str, str, str]:
    """Ada on each backend in turn, with Alice: the entry, Ada's agent, Alice's user, person."""
    return await alice_with(hass, setup_companion, backend)


async def test_forget_while_the_memory_model_is_still_extracting(
    hass: HomeAssistant, llm_server: LLMServer, alice: tuple[MockConfigEntry, str, str, str]
) -> None:
    """The extraction lands after the forget: nothing of it reaches export or a later turn."""
    entry, agent, user, person = alice
    release = asyncio.Event()
    llm_server.script_structured(
        Reply(chunks=(TextChunk(EXTRACTED[:1]), TextChunk(EXTRACTED[1:], hold=release)))
    )
    llm_server.script(Reply.text("Noted."))
    await ask(hass, agent, "The front door code is 4711.", user_id=user)
    await llm_server.asked(structured=1)
    await call(hass, "forget", {"person": person})
    release.set()
    await settled(entry)
    await nothing_of(hass, agent, person)
    llm_server.script(Reply.text("I don't know."))
    await ask(hass, agent, "What is the code of the front door?", user_id=user)
    assert "4711" not in all_messages(llm_server)
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_forget_while_the_turn_is_still_being_answered(
    hass: HomeAssistant, llm_server: LLMServer, alice: tuple[MockConfigEntry, str, str, str]
) -> None:
    """The turn ends after the forget: its exchange comes back neither as history nor memory."""
    entry, agent, user, person = alice
    llm_server.script_structured(*[Reply.text(EXTRACTED)] * 3)
    release = asyncio.Event()
    llm_server.script(Reply.held("Noted, ", "the code is safe with me.", until=release))
    turn = hass.async_create_task(ask(hass, agent, "The front door code is 4711.", user_id=user))
    await llm_server.asked(chat=1)
    await call(hass, "forget", {"person": person})
    release.set()
    await turn
    await settled(entry)
    await nothing_of(hass, agent, person)
    assert [t["user"] for t in stored_turns(hass)] == []
    llm_server.script(Reply.text("I don't know."))
    await ask(hass, agent, "What is the code of the front door?", user_id=user)
    assert "4711" not in all_messages(llm_server)
    assert llm_server.structured_requests == []  # the exchange never reached extraction
    assert await hass.config_entries.async_unload(entry.entry_id)


@pytest.fixture(params=("embedded", "falkordb"))
def graph_backend(request: pytest.FixtureRequest) -> Mapping[str, object]:
    """Return the options of each graph in turn: the embedded store's, FalkorDB's."""
    if request.param == "falkordb":
        return {"memory_neo4j": True, "neo4j_uri": request.getfixturevalue("falkordb")}
    return {}


async def test_the_graph_is_exported_and_forgotten_by_id(
    hass: HomeAssistant,
    llm_server: LLMServer,
    setup_companion: SetupCompanion,
    graph_backend: Mapping[str, object],
) -> None:
    """Export lists the graph's entities and relations; forgetting every exported id clears
    them, so a relation holding a code never reaches the model again."""
    entry, agent, user, person = await alice_with(hass, setup_companion, graph_backend)
    llm_server.script_structured(Reply.text(EXTRACTED))
    await ask(hass, agent, "The front door code is 4711.", user_id=user)
    await settled(entry)
    exported = await call(hass, "export_memories", {"persona": agent, "person": person})
    relations = rows(exported, "relations")
    assert [(r["subject"], r["predicate"], r["object"]) for r in relations] == [
        ("front door", "has code", "4711")
    ]
    assert relations[0]["provenance"]["via"] == "turn"  # type: ignore[index]
    assert exported["total"] == {"memories": 2, "entities": 2, "relations": 1}
    for kind in ("memories", "entities", "relations"):
        for item in rows(exported, kind):
            await call(hass, "forget", {"id": item["id"]})
    await nothing_of(hass, agent, person)
    memory = memory_of(entry)
    scope = MemoryScope(agent_id=entry_persona(entry), owner=f"user:{user}", environment="test")
    assert await memory.graph.neighbourhood([scope], ["front door"]) == []  # type: ignore[union-attr]
    llm_server.script(Reply.text("No idea."))
    await ask(hass, agent, "Anything about the front door?", user_id=user)
    assert "4711" not in last_user_message(llm_server)  # the [memory context] block and words
    assert await hass.config_entries.async_unload(entry.entry_id)


def entry_persona(entry: MockConfigEntry) -> str:
    """Return the entry's only persona's sub-entry id."""
    (only,) = entry.subentries
    return only


async def test_removing_a_persona_removes_everything_it_remembered(
    hass: HomeAssistant,
    llm_server: LLMServer,
    setup_companion: SetupCompanion,
    backend: Mapping[str, object],
) -> None:
    """Its memories, graph and exchanges go; the other persona's stay; its id still forgets."""
    entry = await setup_companion(persona("Ada"), persona("Bea"), options=backend)
    agents = agents_by_title(hass, entry)
    user, _person = await add_person(hass, "Alice")
    ids = {sub.title: sub.subentry_id for sub in entry.subentries.values()}
    llm_server.script_structured(*[Reply.text(EXTRACTED)] * 4)
    for title in ("Ada", "Bea"):
        await ask(hass, agents[title], "From now on, call me Captain.", user_id=user)
        await ask(hass, agents[title], "The front door code is 4711.", user_id=user)
    await settled(entry)
    assert {persona_id for persona_id, _ in stored_conversations(hass)} == set(ids.values())

    hass.config_entries.async_remove_subentry(entry, ids["Ada"])
    await hass.async_block_till_done()
    await settled(entry)
    assert {persona_id for persona_id, _ in stored_conversations(hass)} == {ids["Bea"]}
    memory = memory_of(entry)
    scopes = [
        MemoryScope(agent_id=ids[title], owner=owner, environment="test")
        for title in ("Ada", "Bea")
        for owner in (f"user:{user}", "household")
    ]
    ada, graph = await memory.export(scopes[:2])
    assert (ada.total, graph.total_relations, graph.total_entities) == (0, 0, 0)
    bea, _ = await memory.export(scopes[2:])
    assert bea.total >= 1

    assert (await call(hass, "forget", {"persona": ids["Ada"]}))["forgotten"] == 0
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_forget_while_writes_wait_in_the_outbox(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """mem0's embedding server is away, so Alice's and Bob's writes wait on disk; a forget of
    Alice drops hers there and refuses them when they are tried again; what she says after
    the forget lands, and Bob's writes are untouched (later intent wins, nothing else lost)."""
    options = {"memory_backend": "mem0", "embeddings_model": "test-embed",
               "embeddings_url": llm_server.url}  # fmt: skip
    entry, agent, alice, person = await alice_with(hass, setup_companion, options)
    bob, _ = await add_person(hass, "Bob")
    memory = memory_of(entry)
    llm_server.embeddings_down = True
    llm_server.script_structured(Reply.text(EXTRACTED), Reply.text("{}"))
    await ask(
        hass, agent, "From now on, call me Captain. The front door code is 4711.", user_id=alice
    )
    await ask(hass, agent, "From now on, call me Skipper.", user_id=bob)
    await llm_server.asked(structured=2)
    assert (await memory.outbox.counts())["waiting"] >= 3  # two instructions, Alice's facts

    await call(hass, "forget", {"person": person})
    llm_server.embeddings_down = False
    llm_server.script_structured(Reply.text("{}"))
    await ask(hass, agent, "From now on, call me Admiral.", user_id=alice)
    memory.outbox.kick()
    await settled(entry)
    alices = await call(hass, "export_memories", {"persona": agent, "person": person})
    assert [m["text"] for m in rows(alices)] == ["From now on, call me Admiral."]
    assert (alices["entities"], alices["relations"]) == ([], [])
    bobs = rows(await call(hass, "export_memories", {"persona": agent, "person": "person.bob"}))
    assert [m["text"] for m in bobs] == ["From now on, call me Skipper."]
    assert (await memory.outbox.counts())["waiting"] == 0
    assert await hass.config_entries.async_unload(entry.entry_id)


def extracted(
    facts: list[str], conclusion: tuple[str, str, str] | None, relation: tuple[str, str, str]
) -> str:
    """Return the memory model's answer: facts, a conclusion, a relation and its entities."""
    subject, predicate, obj = relation
    conclusions = [] if conclusion is None else [dict(zip(("subject", "attribute",
                   "conclusion"), conclusion, strict=True))]  # fmt: skip
    return json.dumps(
        {
            "facts": facts,
            "conclusions": conclusions,
            "entities": [subject, obj],
            "relations": [{"subject": subject, "predicate": predicate, "object": obj}],
        }
    )


BIKE_RED = extracted(["Alice's bike lock is red."], None, ("bike lock", "has colour", "red"))
BIKE_CODE = extracted(
    ["Alice's bike lock code is 5150."],
    ("bike lock", "code", "The bike lock code is 5150."),
    ("bike lock", "has code", "5150"),
)
LOCKER = extracted(
    ["Alice's locker code is 7788."],
    ("locker", "code", "The locker code is 7788."),
    ("locker", "has code", "7788"),
)


async def test_forgetting_a_memory_forgets_what_its_statement_left(
    hass: HomeAssistant, llm_server: LLMServer, alice: tuple[MockConfigEntry, str, str, str]
) -> None:
    """One fact of "my bike lock code is 5150" is forgotten by id: the conclusion, the
    relation and the entity ``5150`` of the same statement go too, and so does the exchange;
    ``bike lock``, which another statement also named, stays with that statement's relation."""
    entry, agent, user, person = alice
    llm_server.script_structured(Reply.text(BIKE_RED), Reply.text(BIKE_CODE))
    await ask(hass, agent, "My bike lock is red.", user_id=user)
    await ask(hass, agent, "My bike lock code is 5150.", user_id=user)
    await settled(entry)
    exported = await call(hass, "export_memories", {"persona": agent, "person": person})
    assert sorted(m["text"] or "" for m in rows(exported)) == [
        "Alice's bike lock code is 5150.",
        "Alice's bike lock is red.",
        "The bike lock code is 5150.",
    ]
    (fact,) = [m for m in rows(exported) if m["text"] == "Alice's bike lock code is 5150."]
    await call(hass, "forget", {"id": fact["id"]})

    exported = await call(hass, "export_memories", {"persona": agent, "person": person})
    assert [m["text"] for m in rows(exported)] == ["Alice's bike lock is red."]
    graphed = memory_of(entry).graph is not None  # mem0 alone has no graph
    assert sorted(e["name"] or "" for e in rows(exported, "entities")) == (
        ["bike lock", "red"] if graphed else []
    )
    assert [(r["subject"], r["predicate"], r["object"]) for r in rows(exported, "relations")] == (
        [("bike lock", "has colour", "red")] if graphed else []
    )
    llm_server.script(Reply.text("It is red."))
    await ask(hass, agent, "What do you know about my bike lock?", user_id=user)
    said = all_messages(llm_server)
    assert "5150" not in said
    assert "red" in said  # what the other statement left still reaches the model
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_forget_by_id_wins_over_the_extraction_of_its_statement(
    hass: HomeAssistant, llm_server: LLMServer, alice: tuple[MockConfigEntry, str, str, str]
) -> None:
    """A conclusion stored at once ("remember that my locker code is 7788") is forgotten by
    id while the memory model still answers for that exchange: the fact, the conclusion, the
    entity and the relation it answers never land (their content keys differ)."""
    entry, agent, user, person = alice
    release = asyncio.Event()
    llm_server.script_structured(
        Reply(chunks=(TextChunk(LOCKER[:1]), TextChunk(LOCKER[1:], hold=release)))
    )
    await ask(hass, agent, "Remember that my locker code is 7788.", user_id=user)
    await llm_server.asked(structured=1)
    exported = await call(hass, "export_memories", {"persona": agent, "person": person})
    (conclusion,) = rows(exported)
    assert conclusion["kind"] == "state"
    await call(hass, "forget", {"id": conclusion["id"]})
    release.set()
    await settled(entry)
    await nothing_of(hass, agent, person)
    llm_server.script(Reply.text("I don't know."))
    await ask(hass, agent, "What is my locker code?", user_id=user)
    assert "7788" not in all_messages(llm_server)
    assert await hass.config_entries.async_unload(entry.entry_id)
