"""Fixtures for tests that run a real Home Assistant through the harness."""

from __future__ import annotations

from pathlib import Path

import pytest
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_MEMORY_ENVIRONMENT,
    CONF_MODEL,
    CONF_PROFILE,
    DOMAIN,
    SUBENTRY_CONVERSATION,
)
from tests.support.llm_server import LLMServer


@pytest.fixture(autouse=True)
async def auto_setup(hass: HomeAssistant, enable_custom_integrations: None, tmp_path: Path) -> None:
    """Give HA a fresh config folder; load HA's core integration, which Assist needs."""
    hass.config.config_dir = str(tmp_path)
    assert await async_setup_component(hass, "homeassistant", {})


def make_personas_entry(
    server: LLMServer, personas: dict[str, str], *, llm_apis: list[str] | None = None
) -> MockConfigEntry:
    """Return an entry for the local server with one subentry per ``title: profile``."""
    extra: dict[str, object] = {CONF_LLM_HASS_API: llm_apis} if llm_apis else {}
    return MockConfigEntry(
        domain=DOMAIN,
        title="test-model",
        data={
            CONF_BASE_URL: server.url,
            CONF_API_KEY: "",
            CONF_MODEL: "test-model",
            CONF_MEMORY_ENVIRONMENT: "test",
        },
        subentries_data=[
            {
                "subentry_type": SUBENTRY_CONVERSATION,
                "data": {CONF_PROFILE: profile, **extra},
                "title": title,
                "unique_id": None,
            }
            for title, profile in personas.items()
        ],
    )


def make_entry(
    server: LLMServer, *, llm_apis: list[str] | None = None, profile: str = "default"
) -> MockConfigEntry:
    """Return an entry for the local server with one persona subentry."""
    return make_personas_entry(server, {"Companion": profile}, llm_apis=llm_apis)


@pytest.fixture
async def setup_entry(hass: HomeAssistant, llm_server: LLMServer) -> MockConfigEntry:
    """Set up HA's conversation component and our entry against the local server."""
    assert await async_setup_component(hass, "conversation", {})
    entry = make_entry(llm_server, llm_apis=[llm.LLM_API_ASSIST])
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry
