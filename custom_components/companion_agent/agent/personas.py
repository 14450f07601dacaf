"""Build a persona snapshot for a subentry from the entry's plugins and profiles."""

from __future__ import annotations

from pathlib import Path

from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant

from ..const import CONF_PROFILE, DEFAULT_PROFILE
from ..engine.plugins import Profile
from ..engine.turn.request import Persona
from ..repairs import async_sync_load_problems
from ..runtime import CompanionConfigEntry

FALLBACK_PROFILE = Profile(id=DEFAULT_PROFILE, name="Companion", source=Path("<built-in>"))


def profile_for(entry: CompanionConfigEntry, subentry: ConfigSubentry) -> Profile:
    """Return the subentry's profile, else the default one, else a bare fallback."""
    profiles = entry.runtime_data.library.profiles
    chosen = profiles.get(str(subentry.data.get(CONF_PROFILE, DEFAULT_PROFILE)))
    return chosen or profiles.default or FALLBACK_PROFILE


def build_persona(
    hass: HomeAssistant, entry: CompanionConfigEntry, subentry: ConfigSubentry
) -> Persona:
    """Activate the profile's plugins and report any that failed as repair issues."""
    runtime = entry.runtime_data
    profile = profile_for(entry, subentry)
    plugins = runtime.library.activate(profile, runtime.host)
    runtime.persona_problems[subentry.subentry_id] = plugins.problems
    async_sync_load_problems(hass, runtime.problems)
    return Persona(profile=profile, plugins=plugins, model=runtime.model_named(profile.models.chat))
