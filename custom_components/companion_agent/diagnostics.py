"""Diagnostics: the entry's settings and personas, with secrets redacted."""

from __future__ import annotations

from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant

from .const import CONF_BASE_URL, CONF_MODEL, MEMORY_SECRETS
from .engine.redaction import redact_url
from .runtime import CompanionConfigEntry

TO_REDACT = {CONF_API_KEY, "token", "password", "authorization", *MEMORY_SECRETS}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: CompanionConfigEntry
) -> dict[str, Any]:
    """Return what support needs to see, never a key; less when the entry is not loaded."""
    server: dict[str, object] = {
        "base_url": redact_url(entry.data[CONF_BASE_URL]),
        "model": entry.data[CONF_MODEL],
    }
    settings: dict[str, Any] = {
        "title": redact_url(entry.title),
        "state": entry.state.value,
        "loaded": entry.state is ConfigEntryState.LOADED,
        "entry": async_redact_data(
            {**entry.data, CONF_BASE_URL: redact_url(entry.data[CONF_BASE_URL])}, TO_REDACT
        ),
        "server": server,
        "personas": {
            sub.subentry_id: {
                "title": sub.title,
                "kind": sub.subentry_type,
                "data": _urls_masked(async_redact_data(dict(sub.data), TO_REDACT)),
            }
            for sub in entry.subentries.values()
        },
        "options": {
            key: redact_url(value) if isinstance(value, str) and "://" in value else value
            for key, value in async_redact_data(dict(entry.options), TO_REDACT).items()
        },
    }
    if entry.state is not ConfigEntryState.LOADED:
        return settings
    runtime = entry.runtime_data
    server["reachable"] = runtime.health.reachable
    return {
        **settings,
        **await runtime.engine.diagnostics(),
        "voices": runtime.voices.diagnostics(),
    }


def _urls_masked(value: Any) -> Any:
    """Return ``value`` with the login of every URL in it masked (sections included)."""
    if isinstance(value, dict):
        return {key: _urls_masked(item) for key, item in value.items()}
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    return value
