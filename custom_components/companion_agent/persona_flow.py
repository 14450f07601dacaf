"""The persona subentry flow: a conversation agent with its own profile, prompt and tools."""

from __future__ import annotations

from typing import Any

import voluptuous as vol
from homeassistant.config_entries import ConfigEntryState, ConfigSubentryFlow, SubentryFlowResult
from homeassistant.const import CONF_LLM_HASS_API, CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    TemplateSelector,
)

from .const import CONF_PROFILE, CONF_PROMPT, DEFAULT_CONVERSATION_NAME, DEFAULT_PROFILE
from .runtime import CompanionConfigEntry


def default_persona() -> dict[str, Any]:
    """Return the settings of the persona created with a new entry."""
    return {CONF_PROFILE: DEFAULT_PROFILE, CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]}


class PersonaSubentryFlow(ConfigSubentryFlow):
    """Add or change a persona: a conversation agent with its own prompt and tools."""

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Create a persona."""
        return await self.async_step_set_options(user_input)

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change a persona."""
        return await self.async_step_set_options(user_input)

    async def async_step_set_options(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Show and store the persona's settings."""
        is_new = self.source == "user"
        entry: CompanionConfigEntry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="entry_not_loaded")
        if user_input is not None:
            if not user_input.get(CONF_LLM_HASS_API):
                user_input.pop(CONF_LLM_HASS_API, None)
            if is_new:
                return self.async_create_entry(title=user_input.pop(CONF_NAME), data=user_input)
            return self.async_update_and_abort(
                self._get_entry(), self._get_reconfigure_subentry(), data=user_input
            )
        current = default_persona() if is_new else dict(self._get_reconfigure_subentry().data)
        return self.async_show_form(
            step_id="set_options",
            data_schema=self.add_suggested_values_to_schema(
                persona_schema(self.hass, entry, is_new), current
            ),
        )


def persona_schema(hass: HomeAssistant, entry: CompanionConfigEntry, is_new: bool) -> vol.Schema:
    """Return the persona form: name (new only), profile, extra prompt, HA LLM APIs."""
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
    return vol.Schema(fields)
