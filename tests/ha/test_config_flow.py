"""The config flow against a live local server: success and each error."""

from __future__ import annotations

from typing import Any

import pytest
from homeassistant import config_entries
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components import companion_agent
from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_MODEL,
    CONF_PROFILE,
    CONF_PROMPT,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
)
from tests.ha.common import companion_entry, persona
from tests.support.llm_server import LLMServer


async def start(hass: HomeAssistant) -> str:
    """Open the user step and return the flow id."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {}
    return str(result["flow_id"])


async def test_user_flow_creates_entry_with_a_persona(
    hass: HomeAssistant, llm_server: LLMServer
) -> None:
    """A reachable server creates the entry, its first persona and an AI task entity."""
    flow_id = await start(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_BASE_URL: llm_server.url, CONF_MODEL: "test-model"}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {CONF_BASE_URL: llm_server.url, CONF_MODEL: "test-model"}
    entry = result["result"]
    subentries = list(entry.subentries.values())
    assert [s.subentry_type for s in subentries] == [SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK]
    assert subentries[0].data[CONF_LLM_HASS_API] == ["assist"]
    await hass.async_block_till_done()


async def test_a_server_nothing_listens_on_cannot_connect(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    """Nothing listening on the URL: cannot_connect."""
    async with LLMServer() as server:
        url = server.url
    flow_id = await start(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_BASE_URL: url, CONF_MODEL: "test-model"}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "cannot_connect"}


async def test_a_key_the_server_rejects_is_invalid_auth_until_a_right_one(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    """A key the server rejects: invalid_auth, then a right key succeeds."""
    async with LLMServer(api_key="secret") as server:
        flow_id = await start(hass)
        result = await hass.config_entries.flow.async_configure(
            flow_id, {CONF_BASE_URL: server.url, CONF_API_KEY: "nope", CONF_MODEL: "test-model"}
        )
        assert result["errors"] == {"base": "invalid_auth"}
        result = await hass.config_entries.flow.async_configure(
            flow_id,
            {CONF_BASE_URL: server.url, CONF_API_KEY: "secret", CONF_MODEL: "test-model"},
        )
        assert result["type"] is FlowResultType.CREATE_ENTRY
        await hass.async_block_till_done()
        await hass.config_entries.async_unload(result["result"].entry_id)


async def test_a_model_the_server_does_not_list_is_not_found_on_the_model_field(
    hass: HomeAssistant, llm_server: LLMServer
) -> None:
    """A model the server does not list: model_not_found on the model field."""
    flow_id = await start(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_BASE_URL: llm_server.url, CONF_MODEL: "gpt-99"}
    )
    assert result["errors"] == {CONF_MODEL: "model_not_found"}


async def test_reconfigure_updates_the_entry(hass: HomeAssistant, llm_server: LLMServer) -> None:
    """Reconfigure checks the server again and stores the new settings."""
    entry = companion_entry(llm_server.url, persona())
    entry.add_to_hass(hass)
    result = await entry.start_reconfigure_flow(hass)
    assert result["step_id"] == "reconfigure"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: llm_server.url, CONF_MODEL: "gpt-99"}
    )
    assert result["errors"] == {CONF_MODEL: "model_not_found"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: llm_server.url, CONF_API_KEY: "k2", CONF_MODEL: "test-model"},
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    assert entry.data[CONF_API_KEY] == "k2"
    await hass.async_block_till_done()


async def test_reauth_stores_the_new_key(hass: HomeAssistant, socket_enabled: None) -> None:
    """A rejected key starts reauth at setup; a good key fixes the entry."""
    async with LLMServer(api_key="good") as server:
        entry = companion_entry(server.url, persona())
        entry.add_to_hass(hass)
        assert not await hass.config_entries.async_setup(entry.entry_id)
        flows = hass.config_entries.flow.async_progress()
        assert [f["context"]["source"] for f in flows] == ["reauth"]
        result = await hass.config_entries.flow.async_configure(
            flows[0]["flow_id"], {CONF_API_KEY: "bad"}
        )
        assert result["errors"] == {"base": "invalid_auth"}
        result = await hass.config_entries.flow.async_configure(
            flows[0]["flow_id"], {CONF_API_KEY: "good"}
        )
        assert result["reason"] == "reauth_successful"
        await hass.async_block_till_done()
        assert entry.data[CONF_API_KEY] == "good"
        await hass.config_entries.async_unload(entry.entry_id)


async def test_a_second_persona_can_be_added_and_then_changed(
    hass: HomeAssistant, setup_entry: MockConfigEntry
) -> None:
    """A second persona can be added and then changed."""
    result = await hass.config_entries.subentries.async_init(
        (setup_entry.entry_id, SUBENTRY_CONVERSATION),
        context={"source": config_entries.SOURCE_USER},
    )
    assert result["step_id"] == "set_options"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "Butler",
            CONF_PROFILE: "butler",
            CONF_PROMPT: "Be dry.",
            CONF_LLM_HASS_API: [],
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    butler = next(s for s in setup_entry.subentries.values() if s.title == "Butler")
    assert butler.data == {CONF_PROFILE: "butler", CONF_PROMPT: "Be dry.", "voice_approval": True}
    flow = await setup_entry.start_subentry_reconfigure_flow(hass, butler.subentry_id)
    done = await hass.config_entries.subentries.async_configure(
        flow["flow_id"], {CONF_PROFILE: "butler", CONF_PROMPT: "Be drier."}
    )
    assert done["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert setup_entry.subentries[butler.subentry_id].data[CONF_PROMPT] == "Be drier."


async def test_options_flow_sets_waits_retention_and_pace(
    hass: HomeAssistant, setup_entry: MockConfigEntry
) -> None:
    """Confirmation wait, retention, first-token wait and pace are options, applied on reload."""
    result = await hass.config_entries.options.async_init(setup_entry.entry_id)
    assert result["type"] is FlowResultType.MENU
    assert result["menu_options"] == ["settings", "voice"]
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": "settings"}
    )
    assert result["step_id"] == "settings"
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        {
            "confirm_ttl": 120,
            "retention_days": 7,
            "first_token_timeout": 5,
            "turns_per_minute": 3,
        },
    )
    assert result["step_id"] == "memory"
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"memory_backend": "embedded", "memory_neo4j": False}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert setup_entry.options == {
        "confirm_ttl": 120,
        "retention_days": 7,
        "first_token_timeout": 5,
        "turns_per_minute": 3,
        "memory_backend": "embedded",
        "memory_neo4j": False,
    }
    settings = setup_entry.runtime_data.engine.settings  # the engine takes them as given
    assert settings.model.first_token_timeout == 5
    assert settings.limits.turns_per_minute == 3
    assert settings.confirm_ttl == 120


@pytest.fixture
def setups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the entry's setups, and refuse a flow's reload beside an update listener.

    HA deprecated a config flow that reloads an entry whose update listener also reloads it
    in 2026.6 and made it an error from 2026.12 (core PR 169198; the developer blog of
    7 May 2026): emulated here by failing such a call, as 2026.12 does.
    """
    counted: list[str] = []
    setup = companion_agent.async_setup_entry

    async def counting(hass: HomeAssistant, entry: config_entries.ConfigEntry) -> bool:
        counted.append(entry.entry_id)
        return await setup(hass, entry)

    refuse = config_entries.ConfigFlow.async_update_reload_and_abort

    def emulated_2026_12(
        flow: config_entries.ConfigFlow, entry: config_entries.ConfigEntry, **kwargs: Any
    ) -> config_entries.ConfigFlowResult:
        assert not entry.update_listeners, "a flow reloads beside an update listener"
        return refuse(flow, entry, **kwargs)

    monkeypatch.setattr(companion_agent, "async_setup_entry", counting)
    monkeypatch.setattr(
        config_entries.ConfigFlow, "async_update_reload_and_abort", emulated_2026_12
    )
    return counted


async def test_emulated_2026_12_reconfigure_reloads_a_loaded_entry_once(
    hass: HomeAssistant, llm_server: LLMServer, setups: list[str]
) -> None:
    """A loaded entry's reconfigure reloads it exactly once, by its own update listener."""
    entry = companion_entry(llm_server.url, persona())
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert setups == [entry.entry_id]
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: llm_server.url, CONF_API_KEY: "k2", CONF_MODEL: "test-model"},
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert setups == [entry.entry_id] * 2
    assert entry.state is config_entries.ConfigEntryState.LOADED
    assert entry.data[CONF_API_KEY] == "k2"


async def test_emulated_2026_12_reauth_reloads_once_loaded_or_not(
    hass: HomeAssistant, socket_enabled: None, setups: list[str]
) -> None:
    """Reauth of an entry that did not load reloads it once; of a loaded one, once too."""
    async with LLMServer(api_key="good") as server:
        entry = companion_entry(server.url, persona())
        entry.add_to_hass(hass)
        assert not await hass.config_entries.async_setup(entry.entry_id)
        [flow] = hass.config_entries.flow.async_progress()
        result = await hass.config_entries.flow.async_configure(
            flow["flow_id"], {CONF_API_KEY: "good"}
        )
        assert result["reason"] == "reauth_successful"
        await hass.async_block_till_done()
        assert setups == [entry.entry_id] * 2
        assert entry.state is config_entries.ConfigEntryState.LOADED

        result = await entry.start_reauth_flow(hass)
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_API_KEY: "good"}
        )
        assert result["reason"] == "reauth_successful"
        await hass.async_block_till_done()
        assert setups == [entry.entry_id] * 2  # the same key: nothing to reload
        await hass.config_entries.async_unload(entry.entry_id)
