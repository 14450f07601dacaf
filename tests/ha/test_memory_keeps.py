"""What memory must keep, through a real HA: topics by meaning, the newest in export, and a
to-do list that Assist cannot write unasked.

Each test is one defect of issue 16's "what it must keep is lost": two conclusions with the
same first words replaced each other (lasting instructions, to-do items, in English and
Chinese), export returned the oldest 2,000 records, and the memories to-do list was exposed
to Assist, so an assistant's to-do tools wrote household memories with no provenance.
"""

from __future__ import annotations

import json
from typing import cast

import pytest
from homeassistant.components.homeassistant.exposed_entities import (
    async_expose_entity,
    async_should_expose,
)
from homeassistant.components.todo.intent import INTENT_LIST_ADD_ITEM
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import intent
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.engine.memory import MemoryScope, NewMemory
from tests.ha.common import (
    Row,
    SetupCompanion,
    add_person,
    agents_by_title,
    ask,
    call,
    entity_id,
    memory_of,
    persona,
    rows,
    settled,
)
from tests.support.chat_requests import last_user_message
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

INSTRUCTIONS = {
    "en": ("Remember that I am allergic to shellfish.", "Remember that I am driving to Oslo."),
    "zh": ("记住我对贝类过敏。", "记住我对爵士乐很感兴趣。"),  # the same first two characters
}
ITEMS = {
    "en": ("Mia is vegetarian", "Mia is at school until four"),
    "zh": ("米娅吃素", "米娅四点前在学校"),
}


@pytest.fixture(autouse=True)
async def assist_and_todo(hass: HomeAssistant) -> None:
    """Set up HA's core integration (Assist exposure) and to-do component, as HA does first."""
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "todo", {})


def current(exported: list[Row]) -> list[str]:
    """Return the texts of the current conclusions in an export, sorted."""
    return sorted(
        str(m["text"]) for m in exported if m["kind"] == "state" and m["valid_until"] is None
    )


@pytest.mark.parametrize("said", INSTRUCTIONS.values(), ids=INSTRUCTIONS)
async def test_two_lasting_instructions_with_the_same_first_words_both_stay(
    hass: HomeAssistant,
    llm_server: LLMServer,
    one_persona: tuple[MockConfigEntry, str],
    said: tuple[str, str],
) -> None:
    """The second instruction is its own conclusion: both reach the next turn."""
    entry, agent = one_persona
    user, person = await add_person(hass, "Alice")
    for text in said:
        await ask(hass, agent, text, user_id=user)
    await settled(entry)
    exported = rows(await call(hass, "export_memories", {"persona": agent, "person": person}))
    assert current(exported) == sorted(said)
    states = [m for m in exported if m["kind"] == "state"]
    assert {m["provenance"]["via"] for m in states} == {"instruction"}  # type: ignore[index]
    assert {m["provenance"]["person"] for m in states} == {user}  # type: ignore[index]
    llm_server.script(Reply.text("Noted."))
    await ask(hass, agent, "What do you know about me?", user_id=user)
    prompt = last_user_message(llm_server)
    assert all(text in prompt for text in said)


async def test_extracted_conclusions_take_their_topic_from_their_meaning(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """Two attributes of one subject are two topics (``anna/allergy``, ``anna/travel``)."""
    entry = await setup_companion(persona("Ada"))
    agent = agents_by_title(hass, entry)["Ada"]
    user, person = await add_person(hass, "Anna")
    extracted = {
        "facts": [],
        "conclusions": [
            {"subject": "Anna", "attribute": "Allergy", "conclusion": "She is allergic to prawns."},
            {"subject": "anna ", "attribute": "travel", "conclusion": "She drives to Oslo."},
        ],
        "entities": [],
        "relations": [],
    }  # fmt: skip
    llm_server.script_structured(Reply.text(json.dumps(extracted)))
    await ask(hass, agent, "I'm allergic to shellfish and I drive to Oslo on Friday.", user_id=user)
    await settled(entry)
    exported = rows(await call(hass, "export_memories", {"persona": agent, "person": person}))
    assert sorted((str(m["topic"]), m["valid_until"]) for m in exported) == [
        ("anna/allergy", None),
        ("anna/travel", None),
    ]
    assert {m["provenance"]["via"] for m in exported} == {"turn"}  # type: ignore[index]


async def items(hass: HomeAssistant, listing: str) -> list[str]:
    """Return the summaries of the list's items, sorted."""
    result = await hass.services.async_call(
        "todo", "get_items", {"entity_id": listing}, blocking=True, return_response=True
    )
    listing_items = cast(dict[str, dict[str, list[dict[str, str]]]], result)
    return sorted(item["summary"] for item in listing_items[listing]["items"])


@pytest.mark.parametrize("added", ITEMS.values(), ids=ITEMS)
async def test_to_do_items_with_the_same_first_words_are_two_conclusions(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str], added: tuple[str, str]
) -> None:
    """Each item added by hand is its own conclusion; the same item again is the same one."""
    entry, agent = one_persona
    user, _person = await add_person(hass, "Alice")
    listing = entity_id(hass, entry, "todo")
    for text in (*added, added[0]):
        await hass.services.async_call(
            "todo", "add_item", {"entity_id": listing, "item": text},
            blocking=True, context=Context(user_id=user),
        )  # fmt: skip
        await hass.async_block_till_done()
    assert await items(hass, listing) == sorted(added)
    exported = rows(await call(hass, "export_memories", {"persona": agent}))
    assert current(exported) == sorted(added)
    assert [m["text"] for m in exported if m["valid_until"] is not None] == [added[0]]
    origins = {(m["provenance"]["via"], m["provenance"]["person"]) for m in exported}  # type: ignore[index]
    assert origins == {("todo", user)}


async def test_export_pages_from_the_newest_past_two_thousand(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str]
) -> None:
    """The newest record is on the first page; paging reaches the oldest; totals say how many."""
    entry, agent = one_persona
    memory = memory_of(entry)
    scope = MemoryScope(agent_id=memory_persona(entry), environment="test")
    for batch in range(5):  # 2,500 records, 500 an add
        await memory.store.add(
            [NewMemory(scope=scope, text=f"note {batch * 500 + n}") for n in range(500)]
        )
    first = await call(hass, "export_memories", {"persona": agent, "limit": 500})
    assert first["total"] == {"memories": 2500, "entities": 0, "relations": 0}
    assert [m["text"] for m in rows(first)[:2]] == ["note 2499", "note 2498"]
    seen = [str(m["text"]) for m in rows(first)]
    offset = first["next_offset"]
    while offset is not None:
        page = await call(
            hass, "export_memories", {"persona": agent, "offset": offset, "limit": 500}
        )
        seen.extend(str(m["text"]) for m in rows(page))
        offset = page["next_offset"]
    assert seen == [f"note {n}" for n in reversed(range(2500))]


def memory_persona(entry: MockConfigEntry) -> str:
    """Return the entry's only persona's sub-entry id."""
    (only,) = entry.subentries
    return only


async def test_the_memory_list_is_not_exposed_to_assist_until_the_user_exposes_it(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str]
) -> None:
    """Hidden from Assist at first; a user's choice to expose it holds across a reload; what
    an assistant's to-do intent writes then is marked ``tool``."""
    entry, agent = one_persona
    listing = entity_id(hass, entry, "todo")
    assert not async_should_expose(hass, "conversation", listing)
    with pytest.raises(intent.MatchFailedError):
        await add_through_assist(hass, listing, "Buy oat milk")

    async_expose_entity(hass, "conversation", listing, True)
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    assert async_should_expose(hass, "conversation", listing)
    await add_through_assist(hass, listing, "Buy oat milk")
    await hass.async_block_till_done()
    exported = rows(await call(hass, "export_memories", {"persona": agent}))
    assert [(m["text"], m["provenance"]["via"]) for m in exported] == [  # type: ignore[index]
        ("Buy oat milk", "tool")
    ]


async def add_through_assist(hass: HomeAssistant, listing: str, text: str) -> None:
    """Add an item as an assistant does: HA's to-do intent, matched for Assist."""
    state = hass.states.get(listing)
    assert state is not None
    await intent.async_handle(
        hass, "test", INTENT_LIST_ADD_ITEM,
        {"item": {"value": text}, "name": {"value": state.name}},
        assistant="conversation",
    )  # fmt: skip
