"""Build a persona snapshot for a subentry from the entry's plugins, profiles and models."""

from __future__ import annotations

from collections.abc import Mapping

from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant

from ..const import CONF_PROFILE, DEFAULT_PROFILE, SUBENTRY_CONVERSATION
from ..engine.engine import PersonaSetup
from ..engine.turn.request import Persona
from ..repairs import async_sync_load_problems
from ..runtime import CompanionConfigEntry
from .roles import role_choices


def build_persona(
    hass: HomeAssistant, entry: CompanionConfigEntry, subentry: ConfigSubentry
) -> Persona:
    """Activate the subentry's profile, plugins and models; report failed plugins as issues."""
    engine = entry.runtime_data.engine
    setup = persona_setup(subentry)
    persona = engine.persona(subentry.subentry_id, setup.profile_id, setup.roles)
    async_sync_load_problems(hass, engine.problems)
    return persona


def persona_setups(entry: CompanionConfigEntry) -> Mapping[str, PersonaSetup]:
    """Return every persona of the entry as the engine is told of them at start."""
    return {
        sub.subentry_id: persona_setup(sub)
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    }


def persona_setup(subentry: ConfigSubentry) -> PersonaSetup:
    """Return a persona sub-entry's profile and model roles."""
    return PersonaSetup(
        profile_id=str(subentry.data.get(CONF_PROFILE, DEFAULT_PROFILE)),
        roles=role_choices(subentry.data),
    )
