"""A model per role in a real HA: the persona form's sections checked live, a change that only
new turns see (a turn in flight keeps its model), and diagnostics that never show a key.

Real peers: HA through the harness, the scripted model server (and a second one that wants
its own key) through the openai SDK.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping

import pytest
from homeassistant import config_entries
from homeassistant.const import CONF_API_KEY, CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_MAX_TOKENS,
    CONF_MODEL,
    CONF_PROFILE,
    SUBENTRY_CONVERSATION,
)
from custom_components.companion_agent.diagnostics import async_get_config_entry_diagnostics
from tests.ha.common import SetupCompanion, agents_by_title, ask, persona, speech
from tests.support.chat_requests import asked
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer

TIMEOUT = 10.0


@pytest.fixture
async def own_server(socket_enabled: None) -> AsyncIterator[LLMServer]:
    """Run a second model server that wants its own key and offers two models."""
    async with LLMServer(api_key="role-key", models=("big-70b", "eyes-7b")) as server:
        yield server


async def add_persona(
    hass: HomeAssistant, entry: MockConfigEntry, sections: Mapping[str, object]
) -> dict[str, object]:
    """Submit the persona form with ``sections``; return the flow's answer."""
    flow = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_CONVERSATION), context={"source": config_entries.SOURCE_USER}
    )
    return dict(
        await hass.config_entries.subentries.async_configure(
            flow["flow_id"], {CONF_NAME: "Ada", CONF_PROFILE: "default", **sections}
        )
    )


async def test_the_persona_form_checks_each_roles_server_and_model_live(
    hass: HomeAssistant, setup_companion: SetupCompanion, own_server: LLMServer
) -> None:
    """A refused key, an unknown model, no model on another server, no server: said per role."""
    entry = await setup_companion()
    own: dict[str, object] = {CONF_BASE_URL: own_server.url, CONF_API_KEY: "role-key"}
    async with LLMServer() as gone:
        unreachable = gone.url
    cases: list[tuple[dict[str, object], str]] = [
        ({"chat": {**own, CONF_API_KEY: "wrong", CONF_MODEL: "big-70b"}}, "chat_invalid_auth"),
        ({"vision": {**own, CONF_MODEL: "no-such-model"}}, "vision_model_not_found"),
        ({"memory": {CONF_BASE_URL: own_server.url}}, "memory_model_required"),
        ({"summary": {CONF_BASE_URL: unreachable, CONF_MODEL: "x"}}, "summary_cannot_connect"),
        ({"chat": {CONF_MODEL: "not-on-the-entry-server"}}, "chat_model_not_found"),
    ]
    for wrong, error in cases:
        result = await add_persona(hass, entry, wrong)
        assert (result["type"], result["errors"]) == (FlowResultType.FORM, {"base": error})
    sections: dict[str, dict[str, object]] = {
        "chat": {**own, CONF_MODEL: "big-70b", "temperature": 0.4, "images": "off"},
        "vision": {**own, CONF_MODEL: "eyes-7b"},
    }
    result = await add_persona(hass, entry, sections)
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    ada = next(sub for sub in entry.subentries.values() if sub.title == "Ada")
    assert ada.data["chat"] == sections["chat"]
    own_server.script(Reply.text("Hello from the big model."))
    result_turn = await ask(hass, agents_by_title(hass, entry)["Ada"], "Hello")
    assert speech(result_turn) == "Hello from the big model."
    assert own_server.requests[-1]["model"] == "big-70b"


async def test_a_changed_chat_model_reaches_new_turns_only(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """A turn in flight ends on its model (its next round too); the next turn uses the new
    one; nothing reloads."""
    entry = await setup_companion(persona("Ada"))
    engine = entry.runtime_data.engine
    agent = agents_by_title(hass, entry)["Ada"]
    rest = asyncio.Event()
    clock = Reply.tool_calls(("c1", "get_current_time", "{}"))
    held = (TextChunk("One moment. "), TextChunk("", hold=rest), *clock.chunks)
    llm_server.script(
        Reply(chunks=held, finish_reason="tool_calls"),
        Reply.text("The old model finishes this answer."),
        Reply.text("The new model answers."),
    )
    running = asyncio.create_task(ask(hass, agent, "Tell me something."))
    await asyncio.wait_for(asked(llm_server), TIMEOUT)
    ada = next(sub for sub in entry.subentries.values() if sub.title == "Ada")
    changed = {**ada.data, "chat": {CONF_MODEL: "new-model"}}
    assert hass.config_entries.async_update_subentry(entry, ada, data=changed)
    await hass.async_block_till_done()
    rest.set()
    first = await asyncio.wait_for(running, TIMEOUT)
    second = await ask(hass, agent, "And now?")
    assert speech(first) == "The old model finishes this answer."
    assert speech(second) == "The new model answers."
    models = [request["model"] for request in llm_server.requests]
    assert models == ["test-model", "test-model", "new-model"]
    assert entry.runtime_data.engine is engine  # the persona changed, the entry did not reload


async def test_diagnostics_show_each_roles_binding_never_a_key(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    """Servers (logins masked), names and waits per role; no API key, no URL password."""
    roles: dict[str, dict[str, object]] = {
        "chat": {
            CONF_BASE_URL: "http://ann:hunter2@gpu.lan:8000/v1",
            CONF_API_KEY: "sk-role-secret",
        },
        "memory": {CONF_MODEL: "memo-3b", "first_token_timeout": 45},
    }
    entry = await setup_companion(persona("Ada", roles=roles))
    ada = next(sub for sub in entry.subentries.values() if sub.title == "Ada")
    found = await async_get_config_entry_diagnostics(hass, entry)
    text = json.dumps(found, default=str)
    assert "sk-role-secret" not in text
    assert "hunter2" not in text
    bound = found["models"][ada.subentry_id]
    assert bound["chat"]["base_url"] == "http://***@gpu.lan:8000/v1"
    assert bound["chat"]["api_key"] == "***"
    assert (bound["memory"]["model"], bound["memory"]["first_token_timeout"]) == ("memo-3b", 45.0)
    assert found["personas"][ada.subentry_id]["data"]["chat"][CONF_API_KEY] == "**REDACTED**"


async def test_reconfiguring_a_persona_shows_its_roles_checks_them_and_keeps_the_rest(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """The form starts from the stored sections; a model the server lacks is refused on its
    role and nothing changes; a good one is stored and answers the next turn."""
    entry = await setup_companion(persona("Ada", roles={"chat": {CONF_MODEL: "test-model"}}))
    ada = next(sub for sub in entry.subentries.values() if sub.title == "Ada")
    flow = await entry.start_subentry_reconfigure_flow(hass, ada.subentry_id)
    assert flow["step_id"] == "set_options"
    form = flow["data_schema"]
    assert form is not None
    (chat,) = [val for key, val in form.schema.items() if key == "chat"]
    (model,) = [key for key in chat.schema.schema if key == CONF_MODEL]
    assert model.description == {"suggested_value": "test-model"}
    wrong = await hass.config_entries.subentries.async_configure(
        flow["flow_id"], {CONF_PROFILE: "default", "chat": {CONF_MODEL: "no-such-model"}}
    )
    assert wrong["errors"] == {"base": "chat_model_not_found"}
    assert entry.subentries[ada.subentry_id].data["chat"] == {CONF_MODEL: "test-model"}
    llm_server.models = ("test-model", "other-model")
    done = await hass.config_entries.subentries.async_configure(
        wrong["flow_id"],
        {CONF_PROFILE: "default", "chat": {CONF_MODEL: "other-model", CONF_MAX_TOKENS: 64}},
    )
    assert done["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    llm_server.script(Reply.text("From the other model."))
    result = await ask(hass, agents_by_title(hass, entry)["Ada"], "Hello")
    assert speech(result) == "From the other model."
    (sent,) = llm_server.requests
    assert (sent["model"], sent["max_tokens"]) == ("other-model", 64)
