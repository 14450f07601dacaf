"""A persona whose profile cannot be read keeps its rules, or holds every action, and says so.

A custom profile marks the demo bed light ``confirm``. A typo and a restart, or the file
deleted and ``companion_agent.reload``, leave the light held on the last good rules kept
with the entry, with a repair issue naming the file; with nothing kept (the profile was
broken from the first setup) every action waits for a yes. A fixed file clears the issue
and its new rules apply. The persona form refuses a profile that is not loaded.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from homeassistant import config_entries
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import CONF_LLM_HASS_API, CONF_NAME
from homeassistant.core import HomeAssistant, callback
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_PROFILE,
    DOMAIN,
    SERVICE_RELOAD,
    SUBENTRY_CONVERSATION,
)
from tests.ha.common import SetupCompanion, async_load, persona, write_profile
from tests.ha.common.house import say, state, tool_results
from tests.support.chat_requests import user_text
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

pytestmark = pytest.mark.usefixtures("demo_devices")

BEDTIME = """
    name = "Bedtime"
    persona = "You are the bedtime helper."

    [policy]
    "light.bed_light" = "confirm"
"""
TYPO = BEDTIME.replace('name = "Bedtime"', 'name = "Bedtime')
"""The same profile with an unclosed string on its first line: not TOML."""
EXPOSED = ("light.bed_light", "light.kitchen_lights", "lock.front_door")
BED_LIGHT = '{"name": "Bed Light"}'
KITCHEN_LIGHTS = '{"name": "Kitchen Lights"}'
ISSUE = "persona_rules_"


async def bedtime_house(
    hass: HomeAssistant, setup_companion: SetupCompanion, profile_text: str | None = BEDTIME
) -> MockConfigEntry:
    """Set up the demo lights and lock, and a persona on the user profile ``bedtime``."""
    if profile_text is not None:
        write_profile(hass, "bedtime", profile_text)
    assert await async_setup_component(hass, "conversation", {})
    await async_load(hass, MockConfigEntry(domain="demo"))
    for exposed in EXPOSED:
        async_expose_entity(hass, conversation.DOMAIN, exposed, True)
    return await setup_companion(persona("Bedtime", "bedtime", llm_apis=[llm.LLM_API_ASSIST]))


async def turn_on(
    hass: HomeAssistant, entry: MockConfigEntry, server: LLMServer, name: str = BED_LIGHT
) -> tuple[str, list[tuple[str, object]]]:
    """Have the model turn a light on; return the conversation id and the tool results."""
    server.script(Reply.tool_calls(("call_on", "HassTurnOn", name)), Reply.text("Right."))
    result, content = await say(hass, entry, "Turn on the light")
    assert result.conversation_id is not None
    return result.conversation_id, tool_results(content)


def rules_issues(hass: HomeAssistant) -> dict[str, ir.IssueEntry]:
    """Return the personas' rules issues by id."""
    return {
        issue_id: issue
        for (domain, issue_id), issue in ir.async_get(hass).issues.items()
        if domain == DOMAIN and issue_id.startswith(ISSUE)
    }


def placeholders(issue: ir.IssueEntry) -> Mapping[str, str]:
    """Return an issue's placeholders."""
    return dict(issue.translation_placeholders or {})


async def restart(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """Unload the entry and set it up again, as a restart of HA does."""
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()


async def reload_library(hass: HomeAssistant) -> None:
    """Call ``companion_agent.reload`` and let the personas take the new library."""
    await hass.services.async_call(DOMAIN, SERVICE_RELOAD, blocking=True)
    await hass.async_block_till_done()


async def test_a_typo_and_a_restart_keep_the_last_good_rules_until_the_file_is_fixed(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    hass_storage: dict[str, object],
) -> None:
    """Held while intact; after a typo and a restart still held, with an issue naming the
    file and line; fixed with new rules: the issue goes and the new rules decide."""
    entry = await bedtime_house(hass, setup_companion)
    _, results = await turn_on(hass, entry, llm_server)
    assert results == [("HassTurnOn", "pending_confirmation")]
    assert state(hass, "light.bed_light") == "off"
    assert rules_issues(hass) == {}

    path = write_profile(hass, "bedtime", TYPO)
    await restart(hass, entry)

    _, results = await turn_on(hass, entry, llm_server)
    assert results == [("HassTurnOn", "pending_confirmation")]
    assert state(hass, "light.bed_light") == "off"
    assert f"{DOMAIN}.{entry.entry_id}.rules" in hass_storage  # kept with the entry, on disk
    assert "'bedtime' (bedtime.toml) could not be read" in user_text(llm_server.requests[-2])
    [issue] = rules_issues(hass).values()
    assert issue.translation_key == "persona_profile_broken_kept"
    assert issue.severity is ir.IssueSeverity.WARNING
    shown = placeholders(issue)
    assert (shown["persona"], shown["profile"], shown["path"]) == ("Bedtime", "bedtime", str(path))
    assert "line 2" in shown["message"]

    write_profile(hass, "bedtime", BEDTIME.replace("light.bed_light", "light.kitchen_lights"))
    await reload_library(hass)

    assert rules_issues(hass) == {}
    _, results = await turn_on(hass, entry, llm_server)
    assert results == [("HassTurnOn", "completed")]
    assert state(hass, "light.bed_light") == "on"
    _, results = await turn_on(hass, entry, llm_server, KITCHEN_LIGHTS)
    assert results == [("HassTurnOn", "pending_confirmation")]
    assert "could not be read" not in user_text(llm_server.requests[-2])


async def test_a_deleted_profile_keeps_its_rules_over_a_reload_until_it_is_back(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """Deleted and reloaded: still held, with an issue naming the missing file; back: gone."""
    entry = await bedtime_house(hass, setup_companion)
    _, results = await turn_on(hass, entry, llm_server)
    assert results == [("HassTurnOn", "pending_confirmation")]

    path = write_profile(hass, "bedtime", BEDTIME)
    path.unlink()
    await reload_library(hass)

    _, results = await turn_on(hass, entry, llm_server)
    assert results == [("HassTurnOn", "pending_confirmation")]
    assert state(hass, "light.bed_light") == "off"
    [issue] = rules_issues(hass).values()
    assert issue.translation_key == "persona_profile_missing_kept"
    assert placeholders(issue) == {"persona": "Bedtime", "profile": "bedtime", "path": str(path)}

    await restart(hass, entry)  # the kept rules outlive a restart too
    _, results = await turn_on(hass, entry, llm_server)
    assert results == [("HassTurnOn", "pending_confirmation")]
    assert len(rules_issues(hass)) == 1

    write_profile(hass, "bedtime", BEDTIME)
    await reload_library(hass)
    assert rules_issues(hass) == {}


async def test_a_profile_never_read_holds_every_action_and_reads_run(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """Broken from the first setup, nothing kept: the light waits for a yes (and says why);
    a read-only tool runs at once; the person's yes turns the light on."""
    path = write_profile(hass, "bedtime", TYPO)
    entry = await bedtime_house(hass, setup_companion, profile_text=None)
    events: list[Mapping[str, object]] = []
    hass.bus.async_listen("companion_agent_confirmation", callback(lambda e: events.append(e.data)))

    look, light_on = ("call_look", "GetLiveContext", "{}"), ("call_on", "HassTurnOn", BED_LIGHT)
    llm_server.script(Reply.tool_calls(look, light_on), Reply.text("Shall I turn it on?"))
    result, content = await say(hass, entry, "Turn on the bed light")

    assert sorted(tool_results(content)) == [
        ("GetLiveContext", "completed"),
        ("HassTurnOn", "pending_confirmation"),
    ]
    assert state(hass, "light.bed_light") == "off"
    assert "no earlier copy of its rules is kept" in user_text(llm_server.requests[0])
    [held] = events
    action = held["action"]
    assert isinstance(action, dict)
    assert action["reasons"] == ["profile 'bedtime' (bedtime.toml) could not be read"]

    [issue] = rules_issues(hass).values()
    assert issue.translation_key == "persona_profile_broken_none"
    assert issue.severity is ir.IssueSeverity.ERROR
    assert placeholders(issue)["path"] == str(path)

    llm_server.script(Reply.text("Done."))
    await say(hass, entry, "Yes", result.conversation_id)
    assert state(hass, "light.bed_light") == "on"


async def test_the_persona_form_refuses_a_profile_that_is_not_loaded(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    """A new persona on an unknown profile is refused, naming it; a loaded one is taken."""
    entry = await bedtime_house(hass, setup_companion)
    flow = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_CONVERSATION), context={"source": config_entries.SOURCE_USER}
    )
    chosen = {CONF_NAME: "Night", CONF_PROFILE: "bedtme", CONF_LLM_HASS_API: []}
    result = await hass.config_entries.subentries.async_configure(flow["flow_id"], chosen)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_PROFILE: "profile_not_found"}
    assert result["description_placeholders"] == {"profile": "bedtme"}

    chosen[CONF_PROFILE] = "bedtime"
    result = await hass.config_entries.subentries.async_configure(flow["flow_id"], chosen)
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_kept_rules_that_are_not_rules_keep_nothing(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    hass_storage: dict[str, dict[str, object]],
) -> None:
    """The store holds each persona's profile and marks; edited into something else, it
    keeps nothing, and the persona whose profile broke holds every action."""
    entry = await bedtime_house(hass, setup_companion)
    [persona_id] = entry.subentries
    stored = hass_storage[f"{DOMAIN}.{entry.entry_id}.rules"]
    marks = {"light.bed_light": "confirm"}
    assert stored["data"] == {persona_id: {"profile": "bedtime", "marks": marks}}

    write_profile(hass, "bedtime", TYPO)
    assert await hass.config_entries.async_unload(entry.entry_id)
    stored["data"] = {persona_id: {"profile": "bedtime", "marks": {"light.bed_light": "maybe"}}}
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()

    llm_server.script(
        Reply.tool_calls(("call_off", "HassTurnOff", KITCHEN_LIGHTS)), Reply.text("Sure?")
    )
    _, content = await say(hass, entry, "Turn off the kitchen lights")
    assert tool_results(content) == [("HassTurnOff", "pending_confirmation")]
    assert state(hass, "light.kitchen_lights") == "on"
    [issue] = rules_issues(hass).values()
    assert issue.translation_key == "persona_profile_broken_none"


async def test_a_removed_persona_takes_its_kept_rules_and_its_issue_along(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    hass_storage: dict[str, dict[str, object]],
) -> None:
    """The persona's sub-entry removed: its rules issue and its kept marks go."""
    entry = await bedtime_house(hass, setup_companion)
    [persona_id] = entry.subentries
    path = write_profile(hass, "bedtime", BEDTIME)
    path.unlink()
    await reload_library(hass)
    assert len(rules_issues(hass)) == 1

    assert hass.config_entries.async_remove_subentry(entry, persona_id)
    await hass.async_block_till_done()

    assert rules_issues(hass) == {}
    assert hass_storage[f"{DOMAIN}.{entry.entry_id}.rules"]["data"] == {}
