"""The model roles in a sub-entry's form: one collapsed section per role, checked live.

A persona has four roles (chat, vision, memory, summaries), an AI task two (chat, vision).
Each section may name another OpenAI-compatible server (with its own key), a model, a
temperature, a token limit and a first-token wait; empty, the role keeps the profile's
model on the entry's server. A section that names a server or a model is checked as the
entry's own form checks its server: a server that cannot be reached, a refused key or a
model the server lacks is reported in the form, on that role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import voluptuous as vol
from homeassistant.config_entries import ConfigEntryState, ConfigSubentryFlow, SubentryFlowResult
from homeassistant.const import CONF_API_KEY, CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import section
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectSelector,
    SelectSelectorConfig,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)

from ..const import (
    CONF_BASE_URL,
    CONF_BUSY_TIMEOUT,
    CONF_FIRST_TOKEN_TIMEOUT,
    CONF_IMAGES,
    CONF_MAX_TOKENS,
    CONF_MODEL,
    CONF_ROLE_CHAT,
    CONF_TEMPERATURE,
    IMAGES_OFF,
    IMAGES_ON,
    IMAGES_PROFILE,
    LOGGER,
)
from ..engine.errors import LLMAuthError, LLMError
from ..runtime import CompanionConfigEntry, build_model


class RolesSubentryFlow(ConfigSubentryFlow):
    """A sub-entry with one form: its settings and its model roles, the roles checked live."""

    roles: tuple[str, ...] = ()

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Create the sub-entry."""
        return await self.async_step_set_options(user_input)

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change the sub-entry."""
        return await self.async_step_set_options(user_input)

    async def async_step_set_options(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Show the form; on submit check each role live, then store it."""
        is_new = self.source == "user"
        entry: CompanionConfigEntry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="entry_not_loaded")
        errors: dict[str, str] = {}
        placeholders: dict[str, str] = {}
        if user_input is not None:
            user_input = self.cleaned(user_input)
            errors, placeholders = self.problems(entry, user_input)
            if not errors:
                errors = await async_check_roles(self.hass, entry, user_input, self.roles)
            if not errors and is_new:
                return self.async_create_entry(title=user_input.pop(CONF_NAME), data=user_input)
            if not errors:
                return self.async_update_and_abort(
                    entry, self._get_reconfigure_subentry(), data=user_input
                )
        current = self.defaults() if is_new else dict(self._get_reconfigure_subentry().data)
        return self.async_show_form(
            step_id="set_options",
            data_schema=self.add_suggested_values_to_schema(
                self.form(entry, is_new), user_input or current
            ),
            errors=errors,
            description_placeholders=placeholders or None,
        )

    def form(self, entry: CompanionConfigEntry, is_new: bool) -> vol.Schema:
        """Return the form: its own fields (a name when new) and the role sections."""
        raise NotImplementedError

    def defaults(self) -> dict[str, Any]:
        """Return what a new sub-entry's form starts with."""
        return {}

    def cleaned(self, user_input: dict[str, Any]) -> dict[str, Any]:
        """Return the submitted form as it is stored."""
        return user_input

    def problems(
        self, entry: CompanionConfigEntry, user_input: dict[str, Any]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Return the form errors of the sub-entry's own fields, and what they name."""
        return {}, {}


def role_sections(roles: Sequence[str], *, images_default: str = IMAGES_PROFILE) -> dict[Any, Any]:
    """Return one collapsed form section per role (the chat one says whether it sees images)."""
    return {
        vol.Optional(role): section(vol.Schema(_fields(role, images_default)), {"collapsed": True})
        for role in roles
    }


def _fields(role: str, images_default: str) -> dict[Any, Any]:
    """Return the fields of one role's section."""
    fields: dict[Any, Any] = {
        vol.Optional(CONF_BASE_URL): TextSelector(TextSelectorConfig(type=TextSelectorType.URL)),
        vol.Optional(CONF_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        ),
        vol.Optional(CONF_MODEL): TextSelector(),
        vol.Optional(CONF_TEMPERATURE): NumberSelector(
            NumberSelectorConfig(min=0, max=2, step=0.05, mode=NumberSelectorMode.BOX)
        ),
        vol.Optional(CONF_MAX_TOKENS): vol.All(
            NumberSelector(
                NumberSelectorConfig(min=1, max=1_000_000, step=1, mode=NumberSelectorMode.BOX)
            ),
            vol.Coerce(int),
        ),
        vol.Optional(CONF_FIRST_TOKEN_TIMEOUT): NumberSelector(
            NumberSelectorConfig(min=2, max=300, step=1, unit_of_measurement="s")
        ),
        vol.Optional(CONF_BUSY_TIMEOUT): NumberSelector(
            NumberSelectorConfig(min=2, max=600, step=1, unit_of_measurement="s")
        ),
    }
    if role == CONF_ROLE_CHAT:
        options = (
            [IMAGES_PROFILE, IMAGES_ON, IMAGES_OFF]
            if images_default == IMAGES_PROFILE
            else [
                IMAGES_ON,
                IMAGES_OFF,
            ]
        )
        fields[vol.Required(CONF_IMAGES, default=images_default)] = SelectSelector(
            SelectSelectorConfig(options=options, translation_key=CONF_IMAGES)
        )
    return fields


async def async_check_roles(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    user_input: Mapping[str, Any],
    roles: Sequence[str],
) -> dict[str, str]:
    """Check each role that names a server or a model; return form errors (none: all work)."""
    errors: dict[str, str] = {}
    for role in roles:
        chosen = user_input.get(role)
        if isinstance(chosen, Mapping) and (problem := await _check(hass, entry, chosen)):
            errors["base"] = f"{role}_{problem}"
            return errors
    return errors


async def _check(
    hass: HomeAssistant, entry: CompanionConfigEntry, chosen: Mapping[str, Any]
) -> str | None:
    """Return what is wrong with one role's server or model, or None."""
    url = str(chosen.get(CONF_BASE_URL) or "").strip()
    model = str(chosen.get(CONF_MODEL) or "").strip()
    key = str(chosen.get(CONF_API_KEY) or "").strip()
    if not url and not model:
        return None
    own = bool(url) and url.rstrip("/") != str(entry.data[CONF_BASE_URL]).rstrip("/")
    if own and not model:
        return "model_required"
    server = {
        CONF_BASE_URL: url or entry.data[CONF_BASE_URL],
        CONF_API_KEY: key if own else key or entry.data.get(CONF_API_KEY, ""),
        CONF_MODEL: model,
    }
    try:
        offered = await build_model(hass, server).list_models()
    except LLMAuthError:
        return "invalid_auth"
    except LLMError:
        return "cannot_connect"
    except Exception:
        LOGGER.exception("Unexpected error while checking a role's model server")
        return "cannot_connect"
    if model and offered and model not in offered:
        return "model_not_found"
    return None
