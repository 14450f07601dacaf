"""The voice subentry flow: a Wyoming TTS server, then one of its voices and speakers."""

from __future__ import annotations

from typing import Any

import voluptuous as vol
from homeassistant.config_entries import ConfigSubentryFlow, SubentryFlowResult
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
)

from .const import CONF_LANGUAGES, CONF_SPEAKER, CONF_VOICE, DEFAULT_TTS_PORT
from .engine.errors import SpeechError
from .engine.speech import TtsInfo, TtsVoice, WyomingTTS

TTS_SERVER_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_HOST): str,
        vol.Required(CONF_PORT, default=DEFAULT_TTS_PORT): vol.All(
            NumberSelector(NumberSelectorConfig(min=1, max=65535, step=1)), vol.Coerce(int)
        ),
    }
)


class TtsSubentryFlow(ConfigSubentryFlow):
    """Add a voice: a Wyoming TTS server (piper), then one of its voices and speakers."""

    def __init__(self) -> None:
        """Start with no server chosen."""
        self._server: dict[str, Any] = {}
        self._info = TtsInfo()
        self._voice: TtsVoice | None = None

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Ask for the server and check that it describes its voices."""
        errors: dict[str, str] = {}
        if user_input is not None:
            try:
                self._info = await WyomingTTS(
                    user_input[CONF_HOST], user_input[CONF_PORT]
                ).describe()
            except SpeechError:
                errors["base"] = "cannot_connect"
            else:
                if not self._info.voices:
                    errors["base"] = "no_voices"
                else:
                    self._server = user_input
                    return await self.async_step_voice()
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(TTS_SERVER_SCHEMA, user_input or {}),
            errors=errors,
        )

    async def async_step_voice(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Choose one of the server's voices; ask for a speaker if it has several."""
        if user_input is not None:
            self._voice = self._info.voice(user_input[CONF_VOICE])
            if self._voice is not None and len(self._voice.speakers) > 1:
                return await self.async_step_speaker()
            if self._voice is not None:
                return self._create(self._voice, None)
        options = [
            SelectOptionDict(label=voice.description or voice.name, value=voice.name)
            for voice in self._info.voices
        ]
        return self.async_show_form(
            step_id="voice",
            data_schema=vol.Schema(
                {
                    vol.Required(CONF_VOICE, default=options[0]["value"]): SelectSelector(
                        SelectSelectorConfig(options=options)
                    )
                }
            ),
        )

    async def async_step_speaker(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Choose one of the voice's speakers."""
        assert self._voice is not None
        if user_input is not None:
            return self._create(self._voice, user_input[CONF_SPEAKER])
        return self.async_show_form(
            step_id="speaker",
            data_schema=vol.Schema(
                {
                    vol.Required(CONF_SPEAKER, default=self._voice.speakers[0]): SelectSelector(
                        SelectSelectorConfig(options=list(self._voice.speakers))
                    )
                }
            ),
            description_placeholders={"voice": self._voice.name},
        )

    def _create(self, voice: TtsVoice, speaker: str | None) -> SubentryFlowResult:
        """Create the subentry for ``voice`` (and ``speaker``) on the chosen server."""
        data: dict[str, Any] = {
            **self._server,
            CONF_VOICE: voice.name,
            CONF_LANGUAGES: list(voice.languages),
        }
        if speaker is not None:
            data[CONF_SPEAKER] = speaker
        title = voice.name if speaker is None else f"{voice.name} ({speaker})"
        return self.async_create_entry(title=title, data=data)
