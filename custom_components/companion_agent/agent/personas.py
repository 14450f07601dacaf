"""Build a persona snapshot for a subentry from the entry's plugins, profiles and models.

A persona's profile that is read has its ``[policy]`` marks kept (``last_good_rules.py``);
one that cannot be read gives the persona those kept marks, or every action held, and a
repair issue naming the file, until it is read again.
"""

from __future__ import annotations

from collections.abc import Mapping

from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant

from ..const import CONF_PROFILE, CONF_VOICE_APPROVAL, DEFAULT_PROFILE, SUBENTRY_CONVERSATION
from ..engine.engine import PersonaSetup
from ..engine.turn.request import Persona
from ..repairs import async_sync_load_problems, async_sync_persona_rules
from ..runtime import CompanionConfigEntry
from .roles import role_choices


async def async_build_persona(
    hass: HomeAssistant, entry: CompanionConfigEntry, subentry: ConfigSubentry
) -> Persona:
    """Activate the subentry's profile, rules, plugins and models; report problems as issues."""
    runtime = entry.runtime_data
    engine, persona_id = runtime.engine, subentry.subentry_id
    setup = persona_setup(subentry)
    kept = runtime.rules.get(persona_id, setup.profile_id)
    persona = engine.persona(
        persona_id, setup.profile_id, setup.roles, kept=kept, voice_approval=setup.voice_approval
    )
    rules = persona.applied_rules
    async_sync_load_problems(hass, engine.problems)
    async_sync_persona_rules(hass, entry.entry_id, persona_id, subentry.title, rules)
    if rules.origin == "profile":
        await runtime.rules.async_keep(persona_id, setup.profile_id, rules.marks)
    return persona


def persona_setups(entry: CompanionConfigEntry) -> Mapping[str, PersonaSetup]:
    """Return every persona of the entry as the engine is told of them at start."""
    return {
        sub.subentry_id: persona_setup(sub)
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    }


def persona_setup(subentry: ConfigSubentry) -> PersonaSetup:
    """Return a persona sub-entry's profile, model roles, and whether unlocks wait for a voice."""
    return PersonaSetup(
        profile_id=str(subentry.data.get(CONF_PROFILE, DEFAULT_PROFILE)),
        roles=role_choices(subentry.data),
        voice_approval=subentry.data.get(CONF_VOICE_APPROVAL, True) is not False,
    )
