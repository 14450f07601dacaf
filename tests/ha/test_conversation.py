"""Turns through a real HA: streamed into the ChatLog, tools recorded once, setup/unload."""

from __future__ import annotations

from pathlib import Path

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

type Delta = dict[str, object]


def agent_entity_id(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Return the conversation entity of the entry's only persona."""
    entities = er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
    assert [e.domain for e in entities] == ["conversation"]
    return entities[0].entity_id


async def converse(
    hass: HomeAssistant, agent_id: str, text: str, deltas: list[Delta]
) -> tuple[conversation.ConversationResult, list[conversation.Content]]:
    """Run one turn as the Assist pipeline does, with a delta listener attached."""
    with (
        chat_session.async_get_chat_session(hass) as session,
        conversation.async_get_chat_log(
            hass, session, chat_log_delta_listener=lambda _log, delta: deltas.append(delta)
        ) as chat_log,
    ):
        result = await conversation.async_converse(
            hass, text, session.conversation_id, Context(), language="en", agent_id=agent_id
        )
        return result, list(chat_log.content)


async def test_setup_and_unload(hass: HomeAssistant, setup_entry: MockConfigEntry) -> None:
    """The entry loads one agent per persona and unloads cleanly."""
    assert setup_entry.state is ConfigEntryState.LOADED
    entity_id = agent_entity_id(hass, setup_entry)
    assert hass.states.get(entity_id) is not None
    assert await hass.config_entries.async_unload(setup_entry.entry_id)
    await hass.async_block_till_done()
    state: ConfigEntryState = setup_entry.state
    assert state is ConfigEntryState.NOT_LOADED


async def test_setup_retries_when_server_is_down(hass: HomeAssistant, socket_enabled: None) -> None:
    """An unreachable server leaves the entry retrying, not failed."""
    from tests.ha.conftest import make_entry

    async with LLMServer() as server:
        entry = make_entry(server)
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_RETRY


async def test_streamed_turn_with_a_tool(
    hass: HomeAssistant, setup_entry: MockConfigEntry, llm_server: LLMServer
) -> None:
    """Speech equals the streamed text; the tool call and its result are logged once."""
    agent_id = agent_entity_id(hass, setup_entry)
    llm_server.script(
        Reply.tool_calls(("call_1", "get_current_time", "{}")),
        Reply.text("It is noon. Time for lunch?", chunk_size=3),
    )
    deltas: list[Delta] = []
    result, content = await converse(hass, agent_id, "What time is it?", deltas)

    streamed = "".join(str(d["content"]) for d in deltas if d.get("content"))
    assert streamed == "It is noon. Time for lunch?"
    assert len([d for d in deltas if d.get("content")]) > 3
    assert result.response.speech["plain"]["speech"] == streamed
    assert result.continue_conversation is True

    calls = [
        call
        for c in content
        if isinstance(c, conversation.AssistantContent)
        for call in c.tool_calls or []
    ]
    assert [(c.id, c.tool_name, c.external) for c in calls] == [
        ("call_1", "get_current_time", True)
    ]
    results = [c for c in content if isinstance(c, conversation.ToolResultContent)]
    assert len(results) == 1
    assert results[0].tool_call_id == "call_1"
    assert results[0].tool_result["status"] == "completed"
    assert "datetime" in str(results[0].tool_result["result"])

    second = llm_server.requests[1]["messages"]
    assert isinstance(second, list)
    assert second[0]["role"] == "system"
    assert [m["role"] for m in second[1:]] == ["user", "assistant", "tool"]


async def test_turns_are_stored_and_sent_as_history(
    hass: HomeAssistant, setup_entry: MockConfigEntry, llm_server: LLMServer
) -> None:
    """A second turn in the same conversation carries the first one, and it is on disk."""
    agent_id = agent_entity_id(hass, setup_entry)
    llm_server.script(Reply.text("Hello, Ada."), Reply.text("You are Ada."))
    first = await conversation.async_converse(
        hass, "I am Ada.", None, Context(), language="en", agent_id=agent_id
    )
    await conversation.async_converse(
        hass, "Who am I?", first.conversation_id, Context(), language="en", agent_id=agent_id
    )
    messages = llm_server.requests[1]["messages"]
    assert isinstance(messages, list)
    assert [(m["role"], m["content"]) for m in messages[1:]] == [
        ("user", "I am Ada."),
        ("assistant", "Hello, Ada."),
        ("user", "Who am I?"),
    ]
    assert await hass.config_entries.async_unload(setup_entry.entry_id)
    folder = Path(hass.config.path(DOMAIN)) / "conversations"
    assert len(list(folder.rglob("*.json"))) == 1


async def test_model_down_mid_session_gives_a_spoken_apology(
    hass: HomeAssistant, setup_entry: MockConfigEntry, llm_server: LLMServer
) -> None:
    """A server error before the first token is answered in words, not a crash."""
    agent_id = agent_entity_id(hass, setup_entry)
    llm_server.script(*[Reply.error(500)] * 3)
    result = await conversation.async_converse(
        hass, "Hello?", None, Context(), language="en", agent_id=agent_id
    )
    assert "can't reach my language model" in result.response.speech["plain"]["speech"]


async def test_diagnostics_redact_the_key(
    hass: HomeAssistant, setup_entry: MockConfigEntry
) -> None:
    """Diagnostics show the setup but never the API key."""
    from custom_components.companion_agent.diagnostics import (
        async_get_config_entry_diagnostics,
    )

    hass.config_entries.async_update_entry(
        setup_entry, data={**setup_entry.data, "api_key": "sk-very-secret"}
    )
    await hass.async_block_till_done()
    diagnostics = await async_get_config_entry_diagnostics(hass, setup_entry)
    assert "sk-very-secret" not in repr(diagnostics)
    assert diagnostics["entry"]["api_key"] == "**REDACTED**"
    assert diagnostics["profiles"] == ["baoqiao", "butler", "default"]
    assert diagnostics["plugins"] == ["datetime", "diary", "web_search"]
    assert diagnostics["problems"] == []
