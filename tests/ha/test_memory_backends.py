"""The other backends through HA: a Neo4j graph on FalkorDB (Bolt), mem0 on local Qdrant."""

from __future__ import annotations

import json

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN
from custom_components.companion_agent.engine.memory.models import Relation
from custom_components.companion_agent.engine.memory.stores.mem0 import worker as mem0_worker
from custom_components.companion_agent.engine.memory.stores.mem0.store import Mem0Store
from custom_components.companion_agent.engine.memory.stores.neo4j.graph import Neo4jGraph
from custom_components.companion_agent.engine.retry import RetryPolicy
from tests.ha.common import (
    SetupCompanion,
    agents_by_title,
    ask,
    call,
    memory_of,
    persona,
    rows,
    settled,
)
from tests.support.chat_requests import last_user_message
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

MEM0 = {"memory_backend": "mem0", "embeddings_model": "test-embed"}


def entry_persona(entry: MockConfigEntry) -> str:
    """Return the entry's only persona's subentry id."""
    (only,) = entry.subentries
    return only


def unreachable_issue(hass: HomeAssistant, entry: MockConfigEntry) -> ir.IssueEntry | None:
    """Return the entry's memory_unreachable repair issue, if it is raised."""
    return ir.async_get(hass).async_get_issue(DOMAIN, f"memory_unreachable_{entry.entry_id}")


async def test_relations_go_to_neo4j_and_come_back_for_a_mentioned_entity(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion, falkordb: str
) -> None:
    """Extraction merges relations into the Bolt graph; a later turn naming one sees them."""
    entry = await setup_companion(
        persona("Ada"),
        options={"memory_backend": "embedded", "memory_neo4j": True, "neo4j_uri": falkordb},
    )
    assert isinstance(memory_of(entry).graph, Neo4jGraph)
    assert unreachable_issue(hass, entry) is None
    agent = agents_by_title(hass, entry)["Ada"]
    llm_server.script_structured(
        Reply.text(
            json.dumps(
                {
                    "entities": ["Ann", "Oslo"],
                    "relations": [{"subject": "Ann", "predicate": "lives in", "object": "Oslo"}],
                }
            )
        )
    )
    await ask(hass, agent, "My sister Ann moved to Oslo.")
    await settled(entry)
    memory = memory_of(entry)
    scope = memory.scope(entry_persona(entry), None)
    relation = Relation(subject="Ann", predicate="lives in", object="Oslo")
    assert await memory.graph.neighbourhood([scope], ["ann"]) == [relation]  # type: ignore[union-attr]
    await ask(hass, agent, "Is it cold where Ann lives?")
    assert '(memory) relation: "Ann" "lives in" "Oslo"' in last_user_message(llm_server)


async def test_mem0_on_local_qdrant_remembers_through_turns(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """mem0 (Qdrant in files, the server's embeddings) takes an instruction and gives it back."""
    entry = await setup_companion(
        persona("Ada"), options={**MEM0, "embeddings_url": llm_server.url}
    )
    memory = memory_of(entry)
    assert isinstance(memory.store, Mem0Store)
    assert unreachable_issue(hass, entry) is None
    agent = agents_by_title(hass, entry)["Ada"]
    await ask(hass, agent, "From now on, call me Captain.")
    await settled(entry)
    await ask(hass, agent, "What do you call me?")
    assert '"From now on, call me Captain."' in last_user_message(llm_server)
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_unreachable_graph_raises_a_repair_and_the_turn_answers(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """A Neo4j that does not answer at setup raises a repair issue; memory stays on."""
    entry = await setup_companion(
        persona("Ada"), options={"memory_neo4j": True, "neo4j_uri": "bolt://127.0.0.1:9"}
    )
    issue = unreachable_issue(hass, entry)
    assert issue is not None
    assert "neo4j" in (issue.translation_placeholders or {})["detail"]
    llm_server.script(Reply.text("Hello."))
    result = await ask(hass, agents_by_title(hass, entry)["Ada"], "Hi Ann")
    assert result.response.speech["plain"]["speech"] == "Hello."
    assert memory_of(entry).retrieval.snapshot()["missed_graph"] == 1


async def test_mem0_away_at_startup_keeps_memory_on_and_catches_up(
    hass: HomeAssistant,
    llm_server: LLMServer,
    setup_companion: SetupCompanion,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mem0 with its embedding server down at startup: a repair; the write reaches it later.

    Turns answer meanwhile, and the instruction waits on disk until the server is back.
    """
    monkeypatch.setattr(mem0_worker, "REOPEN_RETRY", RetryPolicy(attempts=None, first_delay=0.0))
    llm_server.embeddings_down = True
    entry = await setup_companion(
        persona("Ada"), options={**MEM0, "embeddings_url": llm_server.url}
    )
    memory = memory_of(entry)
    assert isinstance(memory.store, Mem0Store)
    assert unreachable_issue(hass, entry) is not None
    agent = agents_by_title(hass, entry)["Ada"]
    llm_server.script(Reply.text("Sure, Captain."))
    result = await ask(hass, agent, "From now on, call me Captain.")
    assert result.response.speech["plain"]["speech"] == "Sure, Captain."
    assert (await memory.outbox.counts())["waiting"] >= 1

    llm_server.embeddings_down = False
    memory.outbox.kick()
    await settled(entry)
    exported = rows(await call(hass, "export_memories", {"persona": agent}))
    assert [m["text"] for m in exported] == ["From now on, call me Captain."]
    assert await hass.config_entries.async_unload(entry.entry_id)
