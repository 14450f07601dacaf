"""A model server that is down: the agents stay, say so, and a repair issue follows it."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from homeassistant.config_entries import SOURCE_REAUTH, ConfigEntryDisabler, ConfigEntryState
from homeassistant.const import CONF_API_KEY, STATE_UNAVAILABLE
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.companion_agent.agent.health import CHECK_INTERVAL, unreachable_issue_id
from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_MEMORY_ENVIRONMENT,
    CONF_MODEL,
    DOMAIN,
)
from tests.ha.common import agent_entity_id, async_load, converse
from tests.reliability.ha.common import entry_for
from tests.reliability.ha.switchable_port import SwitchablePort
from tests.support.lines import ENGLISH
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

LOGGER_NAME = "custom_components.companion_agent"


async def set_up(hass: HomeAssistant, url: str) -> MockConfigEntry:
    """Set up HA's conversation component and an entry for ``url``; it must load."""
    assert await async_setup_component(hass, "conversation", {})
    entry = await async_load(hass, entry_for(url))
    assert entry.state is ConfigEntryState.LOADED
    return entry


async def a_minute_passes(hass: HomeAssistant) -> None:
    """Move HA's clock past the next server check and let it finish (it runs in the background)."""
    async_fire_time_changed(hass, dt_util.utcnow() + CHECK_INTERVAL + timedelta(seconds=1))
    await hass.async_block_till_done(wait_background_tasks=True)


def our_lines(caplog: pytest.LogCaptureFixture, level: int, words: str) -> list[str]:
    """Return what the integration's own logger said at ``level`` containing ``words``."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == LOGGER_NAME and record.levelno == level and words in record.getMessage()
    ]


def unreachable_issue(hass: HomeAssistant, entry: MockConfigEntry) -> ir.IssueEntry | None:
    """Return the entry's "cannot reach its model server" issue, if raised."""
    return ir.async_get(hass).async_get_issue(DOMAIN, unreachable_issue_id(entry.entry_id))


async def test_entry_loads_and_answers_while_the_server_is_down(
    hass: HomeAssistant, socket_enabled: None, caplog: pytest.LogCaptureFixture
) -> None:
    """The agents exist; a turn says it cannot reach its model; one warning, no key."""
    async with LLMServer() as server:
        url = server.url
    entry = await set_up(hass, url)
    agent_id = agent_entity_id(hass, entry)
    state = hass.states.get(agent_id)
    assert state is not None
    assert state.state != STATE_UNAVAILABLE

    result, _content = await converse(hass, agent_id, "Turn on the kitchen light.", [])
    assert result.response.speech["plain"]["speech"] == ENGLISH.unreachable

    warnings = our_lines(caplog, logging.WARNING, "not answering")
    assert len(warnings) == 1
    assert url in warnings[0]
    assert unreachable_issue(hass, entry) is None  # not after a single failure


async def test_issue_after_a_minute_down_and_gone_when_the_server_answers_again(
    hass: HomeAssistant, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Still down at the next check: the issue. The server back on that port: the issue goes."""
    async with SwitchablePort() as port:
        entry = await set_up(hass, port.url)
        await a_minute_passes(hass)
        issue = unreachable_issue(hass, entry)
        assert issue is not None
        assert issue.severity is ir.IssueSeverity.ERROR
        assert issue.translation_placeholders == {"server": port.url, "title": "test-model"}

        await a_minute_passes(hass)  # still down: still one issue, still one warning
        assert unreachable_issue(hass, entry) is not None
        assert len(our_lines(caplog, logging.WARNING, "not answering")) == 1

        port.up(llm_server.url)
        await a_minute_passes(hass)
        assert unreachable_issue(hass, entry) is None
        assert len(our_lines(caplog, logging.INFO, "answers again")) == 1

        port.down()
        await a_minute_passes(hass)  # up: no more checks, so nothing notices this
        assert unreachable_issue(hass, entry) is None
        assert len(our_lines(caplog, logging.WARNING, "not answering")) == 1
        port.up(llm_server.url)

        llm_server.script(Reply.text("The kitchen light is on."))
        result, _content = await converse(hass, agent_entity_id(hass, entry), "Light?", [])
        assert result.response.speech["plain"]["speech"] == "The kitchen light is on."


async def test_a_turn_notices_the_server_going_and_coming_back(
    hass: HomeAssistant, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A server lost while running is noticed by a turn; the next good turn clears the issue."""
    async with SwitchablePort() as port:
        port.up(llm_server.url)
        entry = await set_up(hass, port.url)
        agent_id = agent_entity_id(hass, entry)
        port.down()
        result, _content = await converse(hass, agent_id, "Hello?", [])
        assert result.response.speech["plain"]["speech"] == ENGLISH.unreachable
        assert len(our_lines(caplog, logging.WARNING, "not answering")) == 1

        await a_minute_passes(hass)
        assert unreachable_issue(hass, entry) is not None

        port.up(llm_server.url)
        llm_server.script(Reply.text("I am here."))
        result, _content = await converse(hass, agent_id, "Hello?", [])
        assert result.response.speech["plain"]["speech"] == "I am here."
        assert unreachable_issue(hass, entry) is None
        assert len(our_lines(caplog, logging.INFO, "answers again")) == 1


async def test_issue_stays_over_a_reload_and_goes_when_the_entry_is_disabled(
    hass: HomeAssistant, socket_enabled: None, caplog: pytest.LogCaptureFixture
) -> None:
    """Adding a persona while the server is down does not warn twice; disabling clears it."""
    async with SwitchablePort() as port:
        entry = await set_up(hass, port.url)
        await a_minute_passes(hass)
        assert unreachable_issue(hass, entry) is not None

        assert await hass.config_entries.async_reload(entry.entry_id)
        await hass.async_block_till_done()
        assert entry.state is ConfigEntryState.LOADED
        assert unreachable_issue(hass, entry) is not None
        assert len(our_lines(caplog, logging.WARNING, "not answering")) == 1

        await hass.config_entries.async_set_disabled_by(entry.entry_id, ConfigEntryDisabler.USER)
        await hass.async_block_till_done()
        assert unreachable_issue(hass, entry) is None


async def test_a_refused_key_still_starts_reauth(hass: HomeAssistant, socket_enabled: None) -> None:
    """The server answers but rejects the key: setup fails and re-authentication starts."""
    async with LLMServer(api_key="sk-right-key") as server:
        entry = entry_for(server.url, api_key="sk-wrong-key")
        entry.add_to_hass(hass)
        assert not await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        assert entry.state is ConfigEntryState.SETUP_ERROR
        flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
        assert [flow["context"]["source"] for flow in flows] == [SOURCE_REAUTH]
        assert unreachable_issue(hass, entry) is None


async def test_diagnostics_of_an_entry_that_is_not_loaded(
    hass: HomeAssistant, socket_enabled: None, hass_client: ClientSessionGenerator
) -> None:
    """An entry whose setup failed gives its settings, redacted, and says it is not loaded."""
    async with LLMServer(api_key="sk-right-key") as server:
        url = server.url
        entry = entry_for(url, api_key="sk-wrong-key")
        entry.add_to_hass(hass)
        assert not await hass.config_entries.async_setup(entry.entry_id)
        diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert "sk-wrong-key" not in repr(diagnostics)
    assert diagnostics["loaded"] is False
    assert diagnostics["state"] == "setup_error"
    assert diagnostics["entry"] == {
        CONF_BASE_URL: url,
        CONF_API_KEY: "**REDACTED**",
        CONF_MODEL: "test-model",
        CONF_MEMORY_ENVIRONMENT: "test",
    }
    assert diagnostics["server"] == {"base_url": url, "model": "test-model"}
    personas = diagnostics["personas"]
    assert isinstance(personas, dict)
    assert [p["title"] for p in personas.values() if isinstance(p, dict)] == ["Companion"]
    assert "usage" not in diagnostics


async def test_diagnostics_after_unload_say_not_loaded(
    hass: HomeAssistant, setup_entry: MockConfigEntry, hass_client: ClientSessionGenerator
) -> None:
    """An unloaded entry does not report the runtime it had."""
    loaded = await get_diagnostics_for_config_entry(hass, hass_client, setup_entry)
    assert loaded["loaded"] is True
    server = loaded["server"]
    assert isinstance(server, dict)
    assert server["reachable"] is True
    assert await hass.config_entries.async_unload(setup_entry.entry_id)
    unloaded = await get_diagnostics_for_config_entry(hass, hass_client, setup_entry)
    assert unloaded["loaded"] is False
    assert unloaded["state"] == "not_loaded"
    assert "profiles" not in unloaded
