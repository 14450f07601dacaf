"""Diagnostics: the entry's settings and personas, with secrets redacted."""

from __future__ import annotations

from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant

from .const import CONF_BASE_URL
from .engine.audit.redaction import redact_url
from .runtime import CompanionConfigEntry

TO_REDACT = {CONF_API_KEY, "token", "password", "authorization"}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: CompanionConfigEntry
) -> dict[str, Any]:
    """Return what support needs to see, never a key."""
    runtime = entry.runtime_data
    return {
        "title": redact_url(entry.title),
        "entry": async_redact_data(
            {**entry.data, CONF_BASE_URL: redact_url(entry.data[CONF_BASE_URL])}, TO_REDACT
        ),
        "server": {
            "base_url": redact_url(entry.data[CONF_BASE_URL]),
            "model": runtime.model.settings.model,
        },
        "personas": {
            sub.subentry_id: {
                "title": sub.title,
                "data": async_redact_data(dict(sub.data), TO_REDACT),
            }
            for sub in entry.subentries.values()
        },
        "profiles": sorted(profile.id for profile in runtime.library.profiles),
        "plugins": sorted(runtime.library.catalog.plugins),
        "problems": [str(problem) for problem in runtime.problems],
        "options": dict(entry.options),
        "usage": runtime.runner.usage.snapshot(),
        "pending_confirmations": runtime.runner.guard.confirmations.pending_count(),
        "open_conversations": {pid: len(store) for pid, store in runtime.conversations.items()},
    }
