"""The persona sub-entry flow: a conversation agent's profile, prompt, HA APIs and models."""

from __future__ import annotations

from typing import Any

import voluptuous as vol
from homeassistant.const import CONF_LLM_HASS_API, CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    BooleanSelector,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    TemplateSelector,
)

from ..const import (
    CONF_PROFILE,
    CONF_PROMPT,
    CONF_VOICE_APPROVAL,
    DEFAULT_CONVERSATION_NAME,
    DEFAULT_PROFILE,
    ROLE_SECTIONS,
)
from ..engine.plugins import Profile
from ..runtime import CompanionConfigEntry
from .roles import RolesSubentryFlow, role_sections


def default_persona() -> dict[str, Any]:
    """Return the settings of the persona created with a new entry."""
    return {CONF_PROFILE: DEFAULT_PROFILE, CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]}


class PersonaSubentryFlow(RolesSubentryFlow):
    """Add or change a persona: a conversation agent with its own prompt, tools and models."""

    roles = ROLE_SECTIONS

    def form(self, entry: CompanionConfigEntry, is_new: bool) -> vol.Schema:
        """Return the persona form."""
        return persona_schema(self.hass, entry, is_new)

    def defaults(self) -> dict[str, Any]:
        """Start a new persona on the default profile, with HA's Assist API."""
        return default_persona()

    def cleaned(self, user_input: dict[str, Any]) -> dict[str, Any]:
        """Drop an empty choice of HA APIs (no control of HA)."""
        if not user_input.get(CONF_LLM_HASS_API):
            user_input.pop(CONF_LLM_HASS_API, None)
        return user_input

    def problems(
        self, entry: CompanionConfigEntry, user_input: dict[str, Any]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Refuse a profile that is not loaded now (none by that id, or its file is broken)."""
        profile_id = str(user_input.get(CONF_PROFILE, DEFAULT_PROFILE))
        found = entry.runtime_data.engine.library.profiles.find(profile_id)
        if isinstance(found, Profile):
            return {}, {}
        return {CONF_PROFILE: "profile_not_found"}, {"profile": profile_id}


def persona_schema(hass: HomeAssistant, entry: CompanionConfigEntry, is_new: bool) -> vol.Schema:
    """Return the persona form: name (new only), profile, extra prompt, HA LLM APIs, and
    whether an unlock waits for an enrolled adult's voice."""
    apis = [SelectOptionDict(label=api.name, value=api.id) for api in llm.async_get_apis(hass)]
    profiles = [
        SelectOptionDict(label=profile.name, value=profile.id)
        for profile in entry.runtime_data.engine.library.profiles
    ]
    fields: dict[vol.Marker, object] = {}
    if is_new:
        fields[vol.Required(CONF_NAME, default=DEFAULT_CONVERSATION_NAME)] = str
    fields[vol.Required(CONF_PROFILE, default=DEFAULT_PROFILE)] = SelectSelector(
        SelectSelectorConfig(options=profiles, custom_value=True)
    )
    fields[vol.Optional(CONF_PROMPT)] = TemplateSelector()
    fields[vol.Optional(CONF_LLM_HASS_API)] = SelectSelector(
        SelectSelectorConfig(options=apis, multiple=True)
    )
    fields[vol.Optional(CONF_VOICE_APPROVAL, default=True)] = BooleanSelector()
    return vol.Schema({**fields, **role_sections(ROLE_SECTIONS)})
