"""Build a persona snapshot for a subentry from the entry's plugins and profiles."""

from __future__ import annotations

from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant

from ..const import CONF_PROFILE, DEFAULT_PROFILE
from ..engine.turn.request import Persona
from ..repairs import async_sync_load_problems
from ..runtime import CompanionConfigEntry


def build_persona(
    hass: HomeAssistant, entry: CompanionConfigEntry, subentry: ConfigSubentry
) -> Persona:
    """Activate the subentry's profile and plugins; report any that failed as repair issues."""
    engine = entry.runtime_data.engine
    profile_id = str(subentry.data.get(CONF_PROFILE, DEFAULT_PROFILE))
    persona = engine.persona(subentry.subentry_id, profile_id)
    async_sync_load_problems(hass, engine.problems)
    return persona
