"""Assist pipelines that let HA's own intents answer first: a repair issue, and its fix."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

import pytest
from homeassistant.components import (  # requirements_test.txt installs its needs
    assist_pipeline,
    conversation,
)
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import collection, llm
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from custom_components.companion_agent.const import DOMAIN, ISSUE_COMPAT_PIPELINE_CHANGES
from tests.ha.common import agent_entity_id, async_load, companion_entry, persona
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

HA_AGENT = "conversation.home_assistant"


async def set_up_assist(hass: HomeAssistant) -> None:
    """Set up Assist's pipelines and the repairs their issues are fixed from."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    assert await async_setup_component(hass, "repairs", {})
    await hass.async_block_till_done()


def settings(name: str, engine: str, *, local: bool) -> dict[str, Any]:
    """Return every field the pipeline editor sends for a text-only pipeline."""
    return {
        "name": name,
        "conversation_engine": engine,
        "conversation_language": "en",
        "language": "en",
        "stt_engine": None,
        "stt_language": None,
        "tts_engine": None,
        "tts_language": None,
        "tts_voice": None,
        "wake_word_entity": None,
        "wake_word_id": None,
        "prefer_local_intents": local,
    }


async def ws_call(ws: MockHAClientWebSocket, message: dict[str, Any]) -> Any:
    """Send one websocket command, as the frontend does, and return its result."""
    await ws.send_json_auto_id(message)
    reply = await ws.receive_json()
    assert reply["success"], reply
    return reply["result"]


async def create_pipeline(ws: MockHAClientWebSocket, name: str, engine: str, *, local: bool) -> str:
    """Create a pipeline through the websocket API and return its id."""
    created = await ws_call(
        ws, {"type": "assist_pipeline/pipeline/create", **settings(name, engine, local=local)}
    )
    return str(created["id"])


async def update_pipeline(
    ws: MockHAClientWebSocket, pipeline_id: str, name: str, engine: str, *, local: bool
) -> None:
    """Change a pipeline through the websocket API."""
    await ws_call(
        ws,
        {
            "type": "assist_pipeline/pipeline/update",
            "pipeline_id": pipeline_id,
            **settings(name, engine, local=local),
        },
    )


def stored_pipeline(hass: HomeAssistant, pipeline_id: str) -> assist_pipeline.Pipeline:
    """Return a pipeline as Assist has stored it."""
    return next(p for p in assist_pipeline.async_get_pipelines(hass) if p.id == pipeline_id)


def local_intents_issue(hass: HomeAssistant, pipeline_id: str) -> ir.IssueEntry | None:
    """Return the issue raised for a pipeline that answers locally first, if any."""
    return ir.async_get(hass).async_get_issue(DOMAIN, f"local_intents_{pipeline_id}")


def our_issue_ids(hass: HomeAssistant) -> list[str]:
    """Return the ids of every issue of the integration."""
    return sorted(i for d, i in ir.async_get(hass).issues if d == DOMAIN)


async def test_issue_names_the_pipeline_and_the_fix_turns_local_intents_off(
    hass: HomeAssistant,
    setup_entry: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_client: ClientSessionGenerator,
) -> None:
    """The repair flow, driven as the frontend drives it, turns the setting off; the issue goes."""
    await set_up_assist(hass)  # after the entry: picked up when Assist is set up
    agent_id = agent_entity_id(hass, setup_entry)
    ws = await hass_ws_client(hass)
    pipeline_id = await create_pipeline(ws, "Kitchen", agent_id, local=True)

    issue = local_intents_issue(hass, pipeline_id)
    assert issue is not None
    assert issue.is_fixable
    assert issue.severity is ir.IssueSeverity.WARNING
    assert issue.translation_placeholders == {"pipeline": "Kitchen", "agent": "Companion"}

    client = await hass_client()
    response = await client.post(
        "/api/repairs/issues/fix",
        json={"handler": DOMAIN, "issue_id": issue.issue_id},
    )
    assert response.status == HTTPStatus.OK
    form = await response.json()
    assert form["type"] == "form"
    assert form["step_id"] == "confirm"
    assert form["description_placeholders"] == {"pipeline": "Kitchen", "agent": "Companion"}
    assert stored_pipeline(hass, pipeline_id).prefer_local_intents

    response = await client.post(f"/api/repairs/issues/fix/{form['flow_id']}", json={})
    assert response.status == HTTPStatus.OK
    assert (await response.json())["type"] == "create_entry"
    pipeline = stored_pipeline(hass, pipeline_id)
    assert not pipeline.prefer_local_intents
    assert (pipeline.name, pipeline.conversation_engine) == ("Kitchen", agent_id)
    assert local_intents_issue(hass, pipeline_id) is None


async def test_a_pipeline_using_another_agent_raises_no_issue(
    hass: HomeAssistant, setup_entry: MockConfigEntry, hass_ws_client: WebSocketGenerator
) -> None:
    """HA's own agent preferring local intents is none of the companion's business."""
    await set_up_assist(hass)
    ws = await hass_ws_client(hass)
    await create_pipeline(ws, "Hall", HA_AGENT, local=True)
    await create_pipeline(ws, "Study", agent_entity_id(hass, setup_entry), local=False)
    assert our_issue_ids(hass) == []


async def test_issue_follows_every_change_to_the_pipeline(
    hass: HomeAssistant, setup_entry: MockConfigEntry, hass_ws_client: WebSocketGenerator
) -> None:
    """Turned on: the issue. Off, another agent, or the pipeline deleted: it goes."""
    await set_up_assist(hass)
    agent_id = agent_entity_id(hass, setup_entry)
    ws = await hass_ws_client(hass)
    pipeline_id = await create_pipeline(ws, "Kitchen", agent_id, local=False)
    assert local_intents_issue(hass, pipeline_id) is None

    await update_pipeline(ws, pipeline_id, "Kitchen", agent_id, local=True)
    assert local_intents_issue(hass, pipeline_id) is not None
    await update_pipeline(ws, pipeline_id, "Kitchen", agent_id, local=False)
    assert local_intents_issue(hass, pipeline_id) is None

    await update_pipeline(ws, pipeline_id, "Kitchen", agent_id, local=True)
    await update_pipeline(ws, pipeline_id, "Kitchen", HA_AGENT, local=True)
    assert local_intents_issue(hass, pipeline_id) is None

    await update_pipeline(ws, pipeline_id, "Kitchen", agent_id, local=True)
    assert local_intents_issue(hass, pipeline_id) is not None
    await ws_call(ws, {"type": "assist_pipeline/pipeline/delete", "pipeline_id": pipeline_id})
    assert our_issue_ids(hass) == []


async def test_pipelines_there_before_setup_are_checked_and_removal_clears_them(
    hass: HomeAssistant, llm_server: LLMServer, hass_ws_client: WebSocketGenerator
) -> None:
    """With Assist already running, setup finds the pipeline; a reload keeps one issue."""
    await set_up_assist(hass)
    ws = await hass_ws_client(hass)
    entry = companion_entry(llm_server.url, persona(llm_apis=[llm.LLM_API_ASSIST]))
    entity_id = "conversation.companion"  # what HA names the persona "Companion"
    pipeline_id = await create_pipeline(ws, "Kitchen", entity_id, local=True)
    assert our_issue_ids(hass) == []  # no agent of ours yet

    await async_load(hass, entry)
    assert agent_entity_id(hass, entry) == entity_id
    assert our_issue_ids(hass) == [f"local_intents_{pipeline_id}"]

    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    assert our_issue_ids(hass) == [f"local_intents_{pipeline_id}"]

    assert await hass.config_entries.async_remove(entry.entry_id)
    await hass.async_block_till_done()
    assert our_issue_ids(hass) == []


async def test_fix_flow_for_a_pipeline_deleted_meanwhile_aborts(
    hass: HomeAssistant,
    setup_entry: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_client: ClientSessionGenerator,
) -> None:
    """The person confirms after the pipeline is gone: the flow says so, nothing breaks."""
    await set_up_assist(hass)
    ws = await hass_ws_client(hass)
    pipeline_id = await create_pipeline(
        ws, "Kitchen", agent_entity_id(hass, setup_entry), local=True
    )
    client = await hass_client()
    response = await client.post(
        "/api/repairs/issues/fix",
        json={"handler": DOMAIN, "issue_id": f"local_intents_{pipeline_id}"},
    )
    form = await response.json()
    await ws_call(ws, {"type": "assist_pipeline/pipeline/delete", "pipeline_id": pipeline_id})

    response = await client.post(f"/api/repairs/issues/fix/{form['flow_id']}", json={})
    result = await response.json()
    assert (result["type"], result["reason"]) == ("abort", "pipeline_gone")


async def test_emulated_ha_without_the_pipeline_listener_checks_at_setup_and_answers(
    hass: HomeAssistant,
    *,
    llm_server: LLMServer,
    hass_ws_client: WebSocketGenerator,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A newer HA whose collections lost the change-set listener: setup still finds the
    pipeline and the agent answers; changes are no longer followed; one warning, one issue."""
    await set_up_assist(hass)
    monkeypatch.delattr(collection.ObservableCollection, "async_add_change_set_listener")
    ws = await hass_ws_client(hass)
    entity_id = "conversation.companion"
    pipeline_id = await create_pipeline(ws, "Kitchen", entity_id, local=True)
    entry = await async_load(
        hass, companion_entry(llm_server.url, persona(llm_apis=[llm.LLM_API_ASSIST]))
    )
    assert agent_entity_id(hass, entry) == entity_id
    assert local_intents_issue(hass, pipeline_id) is not None  # checked at setup

    await update_pipeline(ws, pipeline_id, "Kitchen", entity_id, local=False)
    assert local_intents_issue(hass, pipeline_id) is not None  # the change went unnoticed
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    assert local_intents_issue(hass, pipeline_id) is None  # the reload checked again

    llm_server.script(Reply.text("The kettle is on."))
    result = await conversation.async_converse(
        hass, "Tea?", None, Context(), language="en", agent_id=entity_id
    )
    assert result.response.speech["plain"]["speech"] == "The kettle is on."
    issue = ir.async_get(hass).async_get_issue(DOMAIN, ISSUE_COMPAT_PIPELINE_CHANGES)
    assert issue is not None
    assert not issue.is_fixable
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "is off" in r.message]
    assert len(warnings) == 1  # setup and reload: once per HA start
