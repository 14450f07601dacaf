"""Credentials in the base URL never show: not in the title, diagnostics, device or log."""

from __future__ import annotations

import logging

import pytest
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.companion_agent.engine.redaction import redact_url
from tests.reliability.ha.common import entry_for
from tests.support.llm_server import LLMServer

SECRETS = ("hunter2", "sk-abcdefghijklmnopqrstuv")


def test_redact_url_masks_credentials_and_keys_but_keeps_the_rest() -> None:
    """``user:pass@`` and secret-looking query values go; host, path and the rest stay."""
    url = "http://ada:hunter2@models.lan:8080/v1?key=sk-abcdefghijklmnopqrstuv&mode=fast"
    assert redact_url(url) == "http://***@models.lan:8080/v1?key=***&mode=fast"
    assert redact_url("http://models.lan:11434/v1") == "http://models.lan:11434/v1"


async def test_no_credential_of_the_url_reaches_title_diagnostics_device_or_log(
    hass: HomeAssistant,
    llm_server: LLMServer,
    hass_client: ClientSessionGenerator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An entry whose URL carries a password and a key shows neither anywhere of ours.

    (httpx's own INFO line for each request shows the URL it was given; HA logs libraries
    at WARNING unless told otherwise.)
    """
    caplog.set_level(logging.DEBUG, logger="custom_components.companion_agent")
    host = llm_server.url.removeprefix("http://")
    url = f"http://ada:hunter2@{host}?key=sk-abcdefghijklmnopqrstuv"
    assert await async_setup_component(hass, "conversation", {})
    entry = entry_for(url)
    entry.add_to_hass(hass)
    hass.config_entries.async_update_entry(entry, title=f"test-model @ {url}")
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    devices = dr.async_entries_for_config_entry(dr.async_get(hass), entry.entry_id)
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("custom_components")]
    shown = [entry.title, repr(diagnostics), *ours, *(d.name or "" for d in devices)]
    for text in shown:
        for secret in SECRETS:
            assert secret not in text
    assert entry.title == f"test-model @ http://***@{host}?key=***"
