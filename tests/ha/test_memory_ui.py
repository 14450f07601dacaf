"""What people see of memory in HA: the memory list per persona, the options step."""

from __future__ import annotations

from typing import cast

import pytest
from homeassistant.config_entries import ConfigEntryState, ConfigFlowResult
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.engine.memory.stores.mem0.store import Mem0Store
from tests.ha.common import add_person, call, entity_id, memory_of, rows
from tests.support.llm_server import LLMServer


@pytest.fixture(autouse=True)
async def todo_component(hass: HomeAssistant) -> None:
    """Set up HA's to-do component, which shows each persona's memory list."""
    assert await async_setup_component(hass, "todo", {})


async def open_memory_step(hass: HomeAssistant, entry: MockConfigEntry) -> ConfigFlowResult:
    """Open the options flow's settings and pass them unchanged; return the memory step."""
    menu = await hass.config_entries.options.async_init(entry.entry_id)
    flow = await hass.config_entries.options.async_configure(
        menu["flow_id"], {"next_step_id": "settings"}
    )
    return await hass.config_entries.options.async_configure(
        flow["flow_id"],
        {"confirm_ttl": 60, "retention_days": 30, "first_token_timeout": 8, "turns_per_minute": 20},
    )


async def items(hass: HomeAssistant, entity_id: str) -> list[str]:
    """Return the summaries of the list's items."""
    result = await hass.services.async_call(
        "todo", "get_items", {"entity_id": entity_id}, blocking=True, return_response=True
    )
    listing = cast(dict[str, dict[str, list[dict[str, str]]]], result)
    return [item["summary"] for item in listing[entity_id]["items"]]


async def todo(hass: HomeAssistant, service: str, data: dict[str, object]) -> None:
    """Call a to-do service and let the list refresh."""
    await hass.services.async_call("todo", service, data, blocking=True)
    await hass.async_block_till_done()


async def test_memory_list_shows_prunes_adds_and_renames_household_conclusions(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str]
) -> None:
    """Items are the household's conclusions; delete forgets, add remembers, rename supersedes.

    A person's own conclusion is never an item: every HA user sees a to-do list.
    """
    entry, agent = one_persona
    _alice, person = await add_person(hass, "Alice")
    await call(
        hass, "remember", {"persona": agent, "person": person, "text": "Oat milk", "topic": "milk"}
    )
    await call(hass, "remember", {"persona": agent, "text": "Tea at four", "topic": "tea"})
    await call(hass, "remember", {"persona": agent, "text": "The wifi is Ferret."})  # a detail
    await hass.async_block_till_done()
    listing = entity_id(hass, entry, "todo")
    assert await items(hass, listing) == ["Tea at four"]
    assert hass.states.get(listing).state == "1"  # type: ignore[union-attr]

    await todo(hass, "add_item", {"entity_id": listing, "item": "Bins go out on Monday"})
    assert sorted(await items(hass, listing)) == ["Bins go out on Monday", "Tea at four"]

    await todo(
        hass, "update_item", {"entity_id": listing, "item": "Tea at four", "rename": "Tea at five"}
    )
    assert sorted(await items(hass, listing)) == ["Bins go out on Monday", "Tea at five"]
    history = rows(await call(hass, "export_memories", {"persona": agent}))
    assert [(m["text"], m["valid_until"] is None) for m in history if m["topic"] == "tea"] == [
        ("Tea at five", True),  # newest first
        ("Tea at four", False),
    ]

    await todo(hass, "remove_item", {"entity_id": listing, "item": ["Tea at five"]})
    assert await items(hass, listing) == ["Bins go out on Monday"]
    left = rows(await call(hass, "export_memories", {"persona": agent}))
    assert sorted(str(m["text"]) for m in left) == [
        "Bins go out on Monday",
        "Oat milk",
        "The wifi is Ferret.",
    ]  # forgotten with its history; Alice's own conclusion untouched


async def test_options_memory_step_checks_servers(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str], llm_server: LLMServer
) -> None:
    """Bad Neo4j and embeddings settings show form errors; a working endpoint is saved."""
    entry, _agent = one_persona
    flow = await open_memory_step(hass, entry)
    assert flow["step_id"] == "memory"
    flow = await hass.config_entries.options.async_configure(
        flow["flow_id"],
        {
            "memory_backend": "embedded",
            "memory_neo4j": True,
            "neo4j_uri": "http://nowhere",
            "embeddings_url": "http://127.0.0.1:9/v1",
            "embeddings_model": "e5",
        },
    )
    assert flow["type"] is FlowResultType.FORM
    assert flow["errors"] == {
        "neo4j_uri": "neo4j_uri_invalid",
        "embeddings_url": "embeddings_unreachable",
    }
    flow = await hass.config_entries.options.async_configure(
        flow["flow_id"],
        {
            "memory_backend": "embedded",
            "memory_neo4j": False,
            "embeddings_url": llm_server.url,
            "embeddings_model": "test-embed",
        },
    )
    assert flow["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert entry.options["embeddings_url"] == llm_server.url
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.engine.memory is not None


async def test_options_memory_step_for_mem0_needs_embeddings(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str], llm_server: LLMServer
) -> None:
    """mem0 without an embeddings endpoint is refused in the form; with one it is saved."""
    entry, _agent = one_persona
    flow = await open_memory_step(hass, entry)
    flow = await hass.config_entries.options.async_configure(
        flow["flow_id"], {"memory_backend": "mem0", "memory_neo4j": False}
    )
    assert flow["errors"] == {"embeddings_url": "embeddings_required"}
    flow = await hass.config_entries.options.async_configure(
        flow["flow_id"],
        {
            "memory_backend": "mem0",
            "memory_neo4j": False,
            "embeddings_url": llm_server.url,
            "embeddings_model": "test-embed",
        },
    )
    assert flow["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert isinstance(memory_of(entry).store, Mem0Store)
