"""Turns through a real HA: streamed into the ChatLog, tools recorded once, setup/unload."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry
from syrupy.assertion import SnapshotAssertion
from syrupy.filters import props

from custom_components.companion_agent.const import DOMAIN
from tests.ha.common import (
    Delta,
    SetupCompanion,
    agent_entity_id,
    async_load,
    companion_entry,
    converse,
    persona,
    stored_conversations,
    stored_turns,
)
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer


async def test_the_entry_loads_one_agent_per_persona_and_unloads_cleanly(
    hass: HomeAssistant, setup_entry: MockConfigEntry
) -> None:
    """The entry loads one agent per persona and unloads cleanly."""
    assert setup_entry.state is ConfigEntryState.LOADED
    entity_id = agent_entity_id(hass, setup_entry)
    assert hass.states.get(entity_id) is not None
    assert await hass.config_entries.async_unload(setup_entry.entry_id)
    await hass.async_block_till_done()
    state: ConfigEntryState = setup_entry.state
    assert state is ConfigEntryState.NOT_LOADED


async def test_setup_loads_when_server_is_down(hass: HomeAssistant, socket_enabled: None) -> None:
    """An unreachable server does not hold the agents back (tests/reliability has the rest)."""
    async with LLMServer() as server:
        entry = companion_entry(server.url, persona())
    await async_load(hass, entry)
    assert entry.state is ConfigEntryState.LOADED


async def test_a_streamed_turn_speaks_its_text_and_logs_the_tool_call_once(
    hass: HomeAssistant,
    setup_entry: MockConfigEntry,
    llm_server: LLMServer,
    freezer: FrozenDateTimeFactory,
    snapshot: SnapshotAssertion,
) -> None:
    """Speech equals the streamed text; the tool call and its result are logged once."""
    freezer.move_to("2026-03-02 12:00:00+00:00")
    agent_id = agent_entity_id(hass, setup_entry)
    llm_server.script(
        Reply.tool_calls(("call_1", "get_current_time", "{}")),
        Reply.text("It is noon. Time for lunch?", chunk_size=3),
    )
    deltas: list[Delta] = []
    result, content = await converse(hass, agent_id, "What time is it?", deltas)

    pieces = [d["content"] for d in deltas if d.get("content")]
    assert len(pieces) > 4  # token by token, not a sentence at a time
    streamed = "".join(str(s) for s in pieces)
    assert streamed == "It is noon. Time for lunch?"
    assert result.response.speech["plain"]["speech"] == streamed
    assert result.continue_conversation is True
    # The system prompt names the date: the snapshots start after it, as HA core's do.
    assert content[1:] == snapshot(name="chat_log", exclude=props("created"))
    assert deltas == snapshot(name="deltas", exclude=props("created"))
    second = llm_server.requests[1]["messages"]
    assert isinstance(second, list)
    assert second[0]["role"] == "system"
    assert second[1:] == snapshot(name="second_request")


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
    assert len(stored_conversations(hass)) == 1
    assert [turn["user"] for turn in stored_turns(hass)] == ["I am Ada.", "Who am I?"]


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


async def test_spoken_apology_comes_in_the_conversation_language(
    hass: HomeAssistant, setup_entry: MockConfigEntry, llm_server: LLMServer
) -> None:
    """The apology is a translation: Chinese for zh-CN, English for a language not shipped."""
    agent_id = agent_entity_id(hass, setup_entry)
    llm_server.script(*[Reply.error(500)] * 6)
    chinese = await conversation.async_converse(
        hass, "你好？", None, Context(), language="zh-CN", agent_id=agent_id
    )
    assert chinese.response.speech["plain"]["speech"] == "抱歉，我现在连不上语言模型，请稍后再试。"
    german = await conversation.async_converse(
        hass, "Hallo?", None, Context(), language="de", agent_id=agent_id
    )
    assert "can't reach my language model" in german.response.speech["plain"]["speech"]


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
    assert diagnostics["plugins"] == ["datetime", "diary", "mood_chat", "state_chat", "web_search"]
    assert diagnostics["problems"] == []


async def test_actions_become_events_and_the_emotion_sensor(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """Tags leave the text, fire companion_agent_action events and set the emotion sensor."""
    entry = await setup_companion(persona(profile="baoqiao"))
    events: list[Mapping[str, object]] = []
    hass.bus.async_listen(
        "companion_agent_action", callback(lambda event: events.append(event.data))
    )
    llm_server.script(Reply.text("[joy]太好啦！[wave]我们出发吧。", chunk_size=2))
    deltas: list[Delta] = []
    result, _content = await converse(hass, agent_entity_id(hass, entry), "出发！", deltas)
    await hass.async_block_till_done()

    assert [(e["action"], e["kind"]) for e in events] == [("joy", "emotion"), ("wave", "action")]
    assert "".join(str(d["content"]) for d in deltas if d.get("content")) == "太好啦！我们出发吧。"
    assert result.response.speech["plain"]["speech"] == "太好啦！我们出发吧。"
    sensor = next(
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.unique_id.endswith("_emotion")
    )
    state = hass.states.get(sensor)
    assert state is not None
    assert state.state == "joy"


async def test_speech_is_the_tts_text(
    hass: HomeAssistant, setup_entry: MockConfigEntry, llm_server: LLMServer
) -> None:
    """The ChatLog keeps markdown for reading; the speech has none, and no URL."""
    llm_server.script(Reply.text("**Found.** The manual is at https://example.com/manual.pdf now."))
    deltas: list[Delta] = []
    result, _content = await converse(hass, agent_entity_id(hass, setup_entry), "Go", deltas)
    shown = "".join(str(d["content"]) for d in deltas if d.get("content"))
    assert shown == "**Found.** The manual is at https://example.com/manual.pdf now."
    speech = result.response.speech["plain"]["speech"]
    assert "**" not in speech
    assert "https" not in speech
    assert speech.startswith("Found.")


async def test_stop_writes_what_is_still_in_memory(
    hass: HomeAssistant, setup_entry: MockConfigEntry, llm_server: LLMServer
) -> None:
    """When HA stops, the last turn reaches the disk even though the entry is not unloaded."""
    from homeassistant.const import EVENT_HOMEASSISTANT_STOP

    llm_server.script(Reply.text("Noted."))
    await conversation.async_converse(
        hass,
        "Remember the milk.",
        None,
        Context(),
        language="en",
        agent_id=agent_entity_id(hass, setup_entry),
    )
    hass.bus.async_fire(EVENT_HOMEASSISTANT_STOP)
    await hass.async_block_till_done()
    [stored] = stored_turns(hass)
    assert stored["user"] == "Remember the milk."


async def test_removing_the_entry_clears_its_repair_issues(
    hass: HomeAssistant, setup_entry: MockConfigEntry
) -> None:
    """Repair issues about plugins and profiles go away with the integration."""
    from homeassistant.helpers import issue_registry as ir

    from custom_components.companion_agent.engine.plugins import LoadProblem
    from custom_components.companion_agent.repairs import async_sync_load_problems

    problem = LoadProblem(kind="plugin", path=Path("/x/plugin.toml"), key="plugin.id", message="m")
    async_sync_load_problems(hass, [problem])
    assert ir.async_get(hass).async_get_issue(DOMAIN, problem.issue_id) is not None
    assert await hass.config_entries.async_remove(setup_entry.entry_id)
    await hass.async_block_till_done()
    assert ir.async_get(hass).async_get_issue(DOMAIN, problem.issue_id) is None
