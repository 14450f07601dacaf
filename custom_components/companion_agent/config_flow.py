"""Config flow: the model server (user, reconfigure, reauth, options); its subentry kinds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import voluptuous as vol
from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlowResult,
    ConfigSubentryFlow,
    OptionsFlow,
)
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.selector import (
    EntitySelector,
    EntitySelectorConfig,
    NumberSelector,
    NumberSelectorConfig,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)

from .const import (
    CONF_ASLEEP_ENTITY,
    CONF_BASE_URL,
    CONF_CONFIRM_TTL,
    CONF_FIRST_TOKEN_TIMEOUT,
    CONF_MODEL,
    CONF_RETENTION_DAYS,
    CONF_TURNS_PER_MINUTE,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONFIRM_TTL,
    DEFAULT_CONVERSATION_NAME,
    DEFAULT_FIRST_TOKEN_TIMEOUT,
    DEFAULT_RETENTION_DAYS,
    DEFAULT_TURNS_PER_MINUTE,
    DOMAIN,
    LOGGER,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_SATELLITE,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .engine.errors import LLMAuthError, LLMError
from .engine.redaction import redact_url
from .flows.ai_task import AITaskSubentryFlow
from .flows.memory import validate_memory
from .flows.persona import PersonaSubentryFlow, default_persona
from .flows.satellite import SatelliteDiscoveryFlow, SatelliteSubentryFlow
from .flows.stt import SttSubentryFlow
from .flows.tts import TtsSubentryFlow
from .memory.options import memory_schema
from .runtime import build_model
from .voice.enrolment import async_voice_option, voice_schema

SERVER_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_BASE_URL): TextSelector(TextSelectorConfig(type=TextSelectorType.URL)),
        vol.Optional(CONF_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        ),
        vol.Required(CONF_MODEL): str,
    }
)
REAUTH_SCHEMA = vol.Schema(
    {vol.Optional(CONF_API_KEY): TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))}
)


async def validate_server(hass: HomeAssistant, data: Mapping[str, Any]) -> dict[str, str]:
    """Ask the server for its models; return form errors (empty when it works)."""
    try:
        models = await build_model(hass, dict(data)).list_models()
    except LLMAuthError:
        return {"base": "invalid_auth"}
    except LLMError:
        return {"base": "cannot_connect"}
    except Exception:
        LOGGER.exception("Unexpected error while checking the model server")
        return {"base": "unknown"}
    if models and data[CONF_MODEL] not in models:
        return {CONF_MODEL: "model_not_found"}
    return {}


class CompanionConfigFlow(SatelliteDiscoveryFlow, domain=DOMAIN):
    """Set up a connection to an OpenAI-compatible model server; offer satellites found."""

    VERSION = 1
    MINOR_VERSION = 2
    """2: an entry has an AI task sub-entry from the start (older ones get one migrating)."""

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask for the server, check it live, and create the entry with one persona."""
        errors: dict[str, str] = {}
        if user_input is not None:
            self._async_abort_entries_match(
                {CONF_BASE_URL: user_input[CONF_BASE_URL], CONF_MODEL: user_input[CONF_MODEL]}
            )
            errors = await validate_server(self.hass, user_input)
            if not errors:
                return self.async_create_entry(
                    title=entry_title(user_input),
                    data=user_input,
                    subentries=[
                        {
                            "subentry_type": SUBENTRY_CONVERSATION,
                            "data": default_persona(),
                            "title": DEFAULT_CONVERSATION_NAME,
                            "unique_id": None,
                        },
                        {
                            "subentry_type": SUBENTRY_AI_TASK,
                            "data": {},
                            "title": DEFAULT_AI_TASK_NAME,
                            "unique_id": None,
                        },
                    ],
                )
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(SERVER_SCHEMA, user_input or {}),
            errors=errors,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the server, key or model of an existing entry."""
        entry = self._get_reconfigure_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            errors = await validate_server(self.hass, user_input)
            if not errors:
                data = {**entry.data, **user_input}
                return self._async_saved(entry, data, "reconfigure_successful", entry_title(data))
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                SERVER_SCHEMA, user_input or dict(entry.data)
            ),
            errors=errors,
        )

    def _async_saved(
        self, entry: ConfigEntry, data: dict[str, Any], reason: str, title: str | None = None
    ) -> ConfigFlowResult:
        """Save the entry's new settings and end the flow; the entry reloads exactly once.

        A loaded entry's update listener reloads it when its data changed (HA deprecated a
        flow that reloads beside such a listener in 2026.6, an error from 2026.12); an
        entry that did not load (its key was refused) has no listener, so the flow reloads
        it itself. (``async_update_and_abort`` would say the first, but HA has it only
        since 2025.11.)
        """
        if entry.state is not ConfigEntryState.LOADED:
            return self.async_update_reload_and_abort(
                entry, data=data, title=title or entry.title, reason=reason
            )
        self.hass.config_entries.async_update_entry(entry, data=data, title=title or entry.title)
        return self.async_abort(reason=reason)

    async def async_step_reauth(self, entry_data: Mapping[str, Any]) -> ConfigFlowResult:
        """Start re-authentication when the server rejects the key."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for a new API key and check it."""
        entry = self._get_reauth_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            data = {**entry.data, CONF_API_KEY: user_input.get(CONF_API_KEY, "")}
            errors = await validate_server(self.hass, data)
            if not errors:
                return self._async_saved(entry, data, "reauth_successful")
        return self.async_show_form(
            step_id="reauth_confirm", data_schema=REAUTH_SCHEMA, errors=errors
        )

    @staticmethod
    @callback
    def async_get_options_flow(config_entry: ConfigEntry) -> CompanionOptionsFlow:
        """Return the flow for the entry's tunables."""
        return CompanionOptionsFlow()

    @classmethod
    @callback
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        """Return the subentry kinds: persona, voice, speech-to-text model, satellite, AI task."""
        return {
            SUBENTRY_CONVERSATION: PersonaSubentryFlow,
            SUBENTRY_TTS: TtsSubentryFlow,
            SUBENTRY_STT: SttSubentryFlow,
            SUBENTRY_SATELLITE: SatelliteSubentryFlow,
            SUBENTRY_AI_TASK: AITaskSubentryFlow,
        }


class CompanionOptionsFlow(OptionsFlow):
    """Tune how the companion acts (waits, retention, the first word, the pace, memory); voices."""

    def __init__(self) -> None:
        """Nothing chosen yet."""
        self._options: dict[str, Any] = {}

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Offer the settings (then memory), or a person's voice."""
        return self.async_show_menu(step_id="init", menu_options=["settings", "voice"])

    async def async_step_voice(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Enrol a person's voice (at a satellite, or from WAV files), or forget it.

        The same checks as the ``enroll_voice`` and ``forget_voice`` actions, as the signed-in
        administrator; the outcome is said as the flow ends (the options are unchanged).
        """
        errors: dict[str, str] = {}
        if user_input is not None:
            try:
                user_id = self.context.get("user_id")
                reason, placeholders = await async_voice_option(
                    self.hass, user_input, user_id if isinstance(user_id, str) else None
                )
            except HomeAssistantError as err:
                errors["base"] = err.translation_key or "voice_failed"
            else:
                return self.async_abort(reason=reason, description_placeholders=placeholders)
        return self.async_show_form(
            step_id="voice",
            data_schema=self.add_suggested_values_to_schema(voice_schema(), user_input or {}),
            errors=errors,
        )

    async def async_step_settings(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Show the tunables, then the memory step."""
        if user_input is not None:
            self._options = user_input
            return await self.async_step_memory()
        schema = vol.Schema(
            {
                vol.Required(CONF_CONFIRM_TTL, default=DEFAULT_CONFIRM_TTL): vol.All(
                    NumberSelector(
                        NumberSelectorConfig(min=10, max=600, step=5, unit_of_measurement="s")
                    ),
                    vol.Coerce(int),
                ),
                vol.Required(CONF_RETENTION_DAYS, default=DEFAULT_RETENTION_DAYS): vol.All(
                    NumberSelector(
                        NumberSelectorConfig(min=1, max=3650, step=1, unit_of_measurement="d")
                    ),
                    vol.Coerce(int),
                ),
                vol.Required(
                    CONF_FIRST_TOKEN_TIMEOUT, default=DEFAULT_FIRST_TOKEN_TIMEOUT
                ): vol.All(
                    NumberSelector(
                        NumberSelectorConfig(min=2, max=120, step=1, unit_of_measurement="s")
                    ),
                    vol.Coerce(int),
                ),
                vol.Required(CONF_TURNS_PER_MINUTE, default=DEFAULT_TURNS_PER_MINUTE): vol.All(
                    NumberSelector(NumberSelectorConfig(min=0, max=600, step=1)),
                    vol.Coerce(int),
                ),
                vol.Optional(CONF_ASLEEP_ENTITY): EntitySelector(
                    EntitySelectorConfig(domain=["input_boolean", "binary_sensor", "switch"])
                ),
            }
        )
        return self.async_show_form(
            step_id="settings",
            data_schema=self.add_suggested_values_to_schema(schema, self.config_entry.options),
        )

    async def async_step_memory(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Choose and check the memory backend; store every option."""
        errors: dict[str, str] = {}
        if user_input is not None:
            errors = await validate_memory(self.hass, user_input)
            if not errors:
                return self.async_create_entry(data={**self._options, **user_input})
        return self.async_show_form(
            step_id="memory",
            data_schema=self.add_suggested_values_to_schema(
                memory_schema(), user_input or self.config_entry.options
            ),
            errors=errors,
        )


def entry_title(data: Mapping[str, Any]) -> str:
    """Return an entry's title: the model and the server, with no credentials in it."""
    return f"{data[CONF_MODEL]} @ {redact_url(data[CONF_BASE_URL])}"
