"""Helpers the HA reliability tests share: an entry for a model server at a URL."""

from __future__ import annotations

from homeassistant.helpers import llm
from pytest_homeassistant_custom_component.common import MockConfigEntry

from tests.ha.common import companion_entry, persona


def entry_for(url: str, *, api_key: str = "") -> MockConfigEntry:
    """Return an entry for the server at ``url`` with one persona that may control the house."""
    return companion_entry(url, persona(llm_apis=[llm.LLM_API_ASSIST]), api_key=api_key)
