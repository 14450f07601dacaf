"""The guard and the tools on HA 2026.9 and 2026.10, emulated on 2026.2.3 (``common/releases.py``).

Every test here is an emulation of a release that cannot be installed here; the shapes and
their sources are in ``tests/ha/common/releases.py``. The house is HA's demo lock, light and
cover, exposed to Assist, as in ``test_guard``.
"""

from __future__ import annotations

import json

import pytest
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from homeassistant.util.json import JsonObjectType
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.agent.chat_stream import tool_result_delta
from custom_components.companion_agent.agent.ha_tools import ToolHints, tool_identity
from custom_components.companion_agent.engine.events import ToolCallEvent
from tests.ha.common import SetupCompanion, async_load, persona, write_profile
from tests.ha.common.house import (
    EXPOSED,
    UNLOCK,
    audit,
    flush_audit,
    say,
    state,
    tool_results,
)
from tests.ha.common.releases import (
    READ_ONLY,
    FixedTool,
    Release,
    ReleaseAPI,
    ToolAnnotations,
    ToolResult,
)
from tests.support.chat_requests import messages
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

pytestmark = pytest.mark.usefixtures("demo_devices")

LOCK = '{"name": "Front Door", "domain": ["lock"]}'
WIPE = FixedTool("mystery__wipe_all", lambda args: {"wiped": True}, ToolAnnotations())
READER = FixedTool("weather_station__read", lambda args: {"reading": "21 °C"}, READ_ONLY)
FAULTY = FixedTool(
    "faulty__check",
    lambda args: ToolResult(data={"error": "Entity not found"}, error=True),
    READ_ONLY,
)


async def release_house(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    release: Release,
    profile: str = "default",
) -> MockConfigEntry:
    """Set up the demo house, a script, and the companion on the release's tools."""
    assert await async_setup_component(hass, "conversation", {})
    await async_load(hass, MockConfigEntry(domain="demo"))
    assert await async_setup_component(
        hass,
        "script",
        {
            "script": {
                "good_morning": {
                    "alias": "Good morning",
                    "sequence": [
                        {"action": "light.turn_on", "target": {"entity_id": "light.bed_light"}}
                    ],
                }
            }
        },
    )
    for exposed in (*EXPOSED, "script.good_morning"):
        async_expose_entity(hass, conversation.DOMAIN, exposed, True)
    for tool in (WIPE, READER, FAULTY):
        tool.calls.clear()
    llm.async_register_api(hass, ReleaseAPI(hass, release, (WIPE, READER, FAULTY)))
    return await setup_companion(persona(profile=profile, llm_apis=[f"assist_{release}"]))


async def marked_house(
    hass: HomeAssistant, setup_companion: SetupCompanion, release: Release, mark: str
) -> MockConfigEntry:
    """Set up the release's house with a persona whose profile has one ``[policy]`` mark."""
    write_profile(hass, "marked", f'persona = "You help the house."\n[policy]\n{mark}\n')
    return await release_house(hass, setup_companion, release, profile="marked")


def tool_messages(body: dict[str, object]) -> list[str]:
    """Return the contents of the tool messages the model was sent."""
    return [str(m["content"]) for m in messages(body) if m.get("role") == "tool"]


@pytest.mark.parametrize("release", ["2026.9", "2026.10"])
async def test_emulated_release_holds_unlock_and_runs_lock(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    release: Release,
    emulate_2026_10: None,
) -> None:
    """Prefixed intents: unlocking the front door is held, locking it is not."""
    entry = await release_house(hass, setup_companion, release)
    await hass.services.async_call("lock", "unlock", {"entity_id": "lock.front_door"}, True)
    llm_server.script(
        Reply.tool_calls(("call_lock", "intent__HassTurnOn", LOCK)), Reply.text("Locked.")
    )
    _result, content = await say(hass, entry, "Lock the front door")
    assert tool_results(content) == [("intent__HassTurnOn", "completed")]
    assert state(hass, "lock.front_door") == "locked"

    llm_server.script(
        Reply.tool_calls(("call_unlock", "intent__HassTurnOff", UNLOCK)),
        Reply.text("Should I unlock the front door?"),
    )
    result, content = await say(hass, entry, "Unlock the front door")
    assert tool_results(content) == [("intent__HassTurnOff", "pending_confirmation")]
    assert state(hass, "lock.front_door") == "locked"
    assert result.continue_conversation is True


@pytest.mark.parametrize("release", ["2026.9", "2026.10"])
async def test_emulated_release_script_tool_reaches_its_script(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    release: Release,
    emulate_2026_10: None,
) -> None:
    """``script__good_morning`` runs the script, and the guard sees the script as its target."""
    entry = await release_house(hass, setup_companion, release)
    llm_server.script(
        Reply.tool_calls(("call_1", "script__good_morning", "{}")), Reply.text("Morning!")
    )
    _result, content = await say(hass, entry, "Good morning")
    await hass.async_block_till_done()
    assert tool_results(content) == [("script__good_morning", "completed")]
    assert state(hass, "light.bed_light") == "on"
    await flush_audit(entry)
    [record] = [r for r in audit(hass) if r["tool"] == "script__good_morning"]
    assert record["state_before"] == {"script.good_morning": "off"}


async def test_emulated_2026_10_results_reach_the_model_as_data_and_errors_as_errors(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    emulate_2026_10: None,
) -> None:
    """A ``ToolResult``'s data is the JSON the model reads; ``error=True`` is a tool error."""
    entry = await release_house(hass, setup_companion, "2026.10")
    llm_server.script(
        Reply.tool_calls(
            ("call_on", "intent__HassTurnOn", '{"name": "Bed Light"}'),
            ("call_check", "faulty__check", '{"name": "Bed Light"}'),
        ),
        Reply.text("The bed light is on; the check failed."),
    )
    _result, content = await say(hass, entry, "Turn on the bed light and check it")
    assert state(hass, "light.bed_light") == "on"
    assert dict(tool_results(content)) == {
        "intent__HassTurnOn": "completed",
        "faulty__check": "error",
    }
    on, check = tool_messages(llm_server.requests[1])
    assert "ToolResult" not in on
    assert json.loads(on)["response_type"] == "action_done"
    assert "ToolResult" not in check
    assert json.loads(check)["error"] == "execution"
    assert "Entity not found" in json.loads(check)["message"]


async def test_emulated_2026_10_annotations_decide_for_tools_our_rules_do_not_know(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    emulate_2026_10: None,
) -> None:
    """Read-only never asks (even naming the lock); a destructive stranger waits for a yes."""
    entry = await release_house(hass, setup_companion, "2026.10")
    llm_server.script(
        Reply.tool_calls(("call_read", "weather_station__read", '{"name": "Front Door"}')),
        Reply.text("It is 21 degrees."),
    )
    _result, content = await say(hass, entry, "What does the station read?")
    assert tool_results(content) == [("weather_station__read", "completed")]
    assert READER.calls == [{"name": "Front Door"}]

    llm_server.script(
        Reply.tool_calls(("call_wipe", "mystery__wipe_all", "{}")),
        Reply.text("Shall I wipe everything?"),
    )
    _result, content = await say(hass, entry, "Wipe it all")
    assert tool_results(content) == [("mystery__wipe_all", "pending_confirmation")]
    assert WIPE.calls == []


async def test_emulated_2026_10_a_persona_may_allow_a_destructive_stranger_by_either_name(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    emulate_2026_10: None,
) -> None:
    """The persona's own mark for the tool (here its bare name) decides for it."""
    entry = await marked_house(hass, setup_companion, "2026.10", 'wipe_all = "allow"')
    llm_server.script(
        Reply.tool_calls(("call_wipe", "mystery__wipe_all", "{}")), Reply.text("Wiped.")
    )
    _result, content = await say(hass, entry, "Wipe it all")
    assert tool_results(content) == [("mystery__wipe_all", "completed")]
    assert WIPE.calls == [{}]


async def test_a_profile_mark_on_the_bare_name_holds_the_prefixed_tool(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """Identical decisions under bare and prefixed names: ``HassTurnOn = confirm`` holds it."""
    entry = await marked_house(hass, setup_companion, "2026.9", 'HassTurnOn = "confirm"')
    llm_server.script(
        Reply.tool_calls(("call_on", "intent__HassTurnOn", '{"name": "Bed Light"}')),
        Reply.text("Shall I?"),
    )
    _result, content = await say(hass, entry, "Turn on the bed light")
    assert tool_results(content) == [("intent__HassTurnOn", "pending_confirmation")]
    assert state(hass, "light.bed_light") == "off"


def test_bare_prefixed_annotated_and_merged_names_give_one_identity(emulate_2026_10: None) -> None:
    """Bare, prefixed, annotated and merged-API names all give one identity."""

    class Named(llm.Tool):
        def __init__(self, name: str, **metadata: object) -> None:
            self.name = name
            for key, value in metadata.items():
                setattr(self, key, value)

        async def async_call(
            self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
        ) -> JsonObjectType:
            raise NotImplementedError

    bare, prefixed = tool_identity(Named("HassTurnOn")), tool_identity(Named("intent__HassTurnOn"))
    annotated = tool_identity(
        Named("light__HassLightSet", integration="light", annotations=READ_ONLY)
    )
    merged = tool_identity(llm.NamespacedTool("assist", Named("intent__HassTurnOn")))
    assert (bare.base, bare.integration, bare.aliases) == ("HassTurnOn", None, ())
    assert (prefixed.base, prefixed.integration) == ("HassTurnOn", "intent")
    assert prefixed.aliases == ("HassTurnOn",)
    assert (merged.name, merged.base, merged.integration) == (
        "assist__intent__HassTurnOn",
        "HassTurnOn",
        "intent",
    )
    assert (annotated.base, annotated.integration) == ("HassLightSet", "light")
    assert annotated.hints is not None
    assert annotated.hints.read_only
    assert bare.hints is None
    assert prefixed.hints is None
    unsaid = tool_identity(Named("mystery__wipe", integration="mystery", annotations=object()))
    assert unsaid.hints == ToolHints(
        read_only=False, destructive=True, idempotent=False, open_world=True
    )


def test_emulated_2026_10_tool_result_delta_carries_a_tool_result(
    monkeypatch: pytest.MonkeyPatch, emulate_2026_10: None
) -> None:
    """Where HA's delta names ``result`` (2026.10), a failed call is ``ToolResult(error=True)``.

    2026.10's ``ToolResultContentDeltaDict`` gains ``result: llm.ToolResult`` (developer
    blog of 26 September 2026); 2026.2.3's has only ``tool_result``.
    """
    event = ToolCallEvent(
        tool_id="call_1",
        tool_name="intent__HassTurnOn",
        args={},
        status="error",
        result="no such light",
    )
    assert "tool_result" in tool_result_delta(event)

    class Delta2026_10(conversation.ToolResultContentDeltaDict, total=False):
        result: ToolResult

    monkeypatch.setattr(conversation, "ToolResultContentDeltaDict", Delta2026_10)
    delta = tool_result_delta(event)
    assert "tool_result" not in delta
    assert delta["result"] == ToolResult(  # type: ignore[typeddict-item]
        data={"status": "error", "result": "no such light"}, error=True
    )
