"""The speech-to-text subentry flow: a Wyoming ASR server, then one of its models."""

from __future__ import annotations

from typing import Any

import voluptuous as vol
from homeassistant.config_entries import SOURCE_RECONFIGURE, ConfigSubentryFlow, SubentryFlowResult
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.helpers.selector import SelectOptionDict, SelectSelector, SelectSelectorConfig

from ..const import CONF_LANGUAGES, CONF_MODEL, DEFAULT_STT_PORT
from ..engine.errors import SpeechError
from ..engine.speech import AsrInfo, AsrModel, WyomingSTT
from ..voice.server_address import address_schema

STT_SERVER_SCHEMA = address_schema(DEFAULT_STT_PORT)


class SttSubentryFlow(ConfigSubentryFlow):
    """Add speech to text: a Wyoming ASR server (faster-whisper), then a model and languages."""

    def __init__(self) -> None:
        """Start with no server chosen."""
        self._server: dict[str, Any] = {}
        self._info = AsrInfo()

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Ask for the server and check that it describes an installed model."""
        errors: dict[str, str] = {}
        if user_input is not None:
            try:
                self._info = await WyomingSTT(
                    user_input[CONF_HOST], user_input[CONF_PORT]
                ).describe()
            except SpeechError:
                errors["base"] = "cannot_connect"
            else:
                if not self._info.installed:
                    errors["base"] = "no_models"
                else:
                    self._server = user_input
                    return await self.async_step_model()
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(
                STT_SERVER_SCHEMA, user_input or self._current()
            ),
            errors=errors,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change the server, model or languages; the steps start from the current values."""
        return await self.async_step_user(user_input)

    async def async_step_model(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Choose one of the server's models, and which of its languages to offer."""
        errors: dict[str, str] = {}
        models = self._info.installed
        if user_input is not None:
            model = self._info.model(user_input[CONF_MODEL])
            languages: list[str] = list(user_input.get(CONF_LANGUAGES) or ())
            if model is None or not model.installed:
                errors[CONF_MODEL] = "model_not_found"
            elif not set(languages) <= set(model.languages):
                errors[CONF_LANGUAGES] = "language_unsupported"
            else:
                return self._create(model, languages or list(model.languages))
        languages = sorted({language for model in models for language in model.languages})
        schema = vol.Schema(
            {
                vol.Required(CONF_MODEL, default=models[0].name): SelectSelector(
                    SelectSelectorConfig(
                        options=[
                            SelectOptionDict(
                                label=model.description or model.name, value=model.name
                            )
                            for model in models
                        ]
                    )
                ),
                vol.Optional(CONF_LANGUAGES): SelectSelector(
                    SelectSelectorConfig(options=languages, multiple=True)
                ),
            }
        )
        return self.async_show_form(
            step_id="model",
            data_schema=self.add_suggested_values_to_schema(schema, user_input or self._current()),
            errors=errors,
        )

    def _current(self) -> dict[str, Any]:
        """Return the reconfigured subentry's values, or nothing for a new one."""
        if self.source != SOURCE_RECONFIGURE:
            return {}
        return dict(self._get_reconfigure_subentry().data)

    def _create(self, model: AsrModel, languages: list[str]) -> SubentryFlowResult:
        """Create the subentry for ``model`` and ``languages`` on the chosen server."""
        short = model.name.rstrip("/").rsplit("/", 1)[-1]  # a model may be named by its path
        title = f"{model.program} ({short})" if model.program else short
        data = {**self._server, CONF_MODEL: model.name, CONF_LANGUAGES: languages}
        if self.source == SOURCE_RECONFIGURE:
            return self.async_update_and_abort(
                self._get_entry(), self._get_reconfigure_subentry(), title=title, data=data
            )
        return self.async_create_entry(title=title, data=data)
