"""The voice subentry flow: a Wyoming TTS server or embedded Piper, then a voice and speaker.

Adding and reconfiguring share every step; reconfiguring starts from the subentry's values,
checks the server (or the voice files) live again, and updates the subentry.
"""

from __future__ import annotations

from typing import Any

import voluptuous as vol
from homeassistant.config_entries import SOURCE_RECONFIGURE, ConfigSubentryFlow, SubentryFlowResult
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.helpers.selector import (
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
)

from ..const import (
    CONF_ENGINE,
    CONF_LANGUAGES,
    CONF_SPEAKER,
    CONF_VOICE,
    DEFAULT_TTS_PORT,
    ENGINE_EMBEDDED,
    PIPER_REQUIREMENT,
)
from ..engine.errors import SpeechEngineMissingError, SpeechError, VoiceFileError
from ..engine.speech import LoadedPiperVoice, TtsInfo, TtsVoice, VoiceFile, WyomingTTS
from ..voice.embedded_piper import async_list_voice_files, async_require_piper, voices_folder
from ..voice.server_address import address_schema

TTS_SERVER_SCHEMA = address_schema(DEFAULT_TTS_PORT)
ENGINE_STEPS = ["server", "embedded"]


class TtsSubentryFlow(ConfigSubentryFlow):
    """Add or change a voice: a Wyoming server (piper) or embedded Piper, then its voice."""

    def __init__(self) -> None:
        """Start with no server or folder chosen."""
        self._server: dict[str, Any] = {}
        self._info = TtsInfo()
        self._files: tuple[VoiceFile, ...] = ()
        self._voice: TtsVoice | None = None

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Ask where the voice comes from: a Wyoming server or Piper inside Home Assistant."""
        return self.async_show_menu(step_id="user", menu_options=ENGINE_STEPS)

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask again where the voice comes from; the next steps start from its values."""
        return self.async_show_menu(step_id="reconfigure", menu_options=ENGINE_STEPS)

    async def async_step_server(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
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
                    self._files = ()
                    return await self.async_step_voice()
        return self.async_show_form(
            step_id="server",
            data_schema=self.add_suggested_values_to_schema(
                TTS_SERVER_SCHEMA, user_input or self._current()
            ),
            errors=errors,
        )

    async def async_step_embedded(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Install piper-tts if needed, then list the voice files (again on each submit)."""
        try:
            await async_require_piper(self.hass)
        except SpeechEngineMissingError:
            return self.async_abort(
                reason="piper_unavailable",
                description_placeholders={"requirement": PIPER_REQUIREMENT},
            )
        self._files = await async_list_voice_files(self.hass)
        if self._files:
            self._server = {CONF_ENGINE: ENGINE_EMBEDDED}
            self._info = TtsInfo(voices=tuple(file.voice for file in self._files))
            return await self.async_step_voice()
        return self.async_show_form(
            step_id="embedded",
            data_schema=vol.Schema({}),
            errors={"base": "no_voice_files"},
            description_placeholders={"folder": str(voices_folder(self.hass))},
        )

    async def async_step_voice(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Choose one of the voices; check an embedded one loads; ask for a speaker if several."""
        errors: dict[str, str] = {}
        if user_input is not None and (voice := self._info.voice(user_input[CONF_VOICE])):
            self._voice = voice
            if self._files and not await self._async_loads(voice.name):
                errors["base"] = "voice_file_invalid"
            elif len(voice.speakers) > 1:
                return await self.async_step_speaker()
            else:
                return self._finish(voice, None)
        options = [
            SelectOptionDict(label=voice.description or voice.name, value=voice.name)
            for voice in self._info.voices
        ]
        current = self._current().get(CONF_VOICE)
        default = current if self._info.voice(current or "") else options[0]["value"]
        return self.async_show_form(
            step_id="voice",
            data_schema=vol.Schema(
                {
                    vol.Required(CONF_VOICE, default=default): SelectSelector(
                        SelectSelectorConfig(options=options)
                    )
                }
            ),
            errors=errors,
        )

    async def async_step_speaker(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Choose one of the voice's speakers."""
        assert self._voice is not None
        if user_input is not None:
            return self._finish(self._voice, user_input[CONF_SPEAKER])
        current = self._current().get(CONF_SPEAKER)
        default = current if current in self._voice.speakers else self._voice.speakers[0]
        return self.async_show_form(
            step_id="speaker",
            data_schema=vol.Schema(
                {
                    vol.Required(CONF_SPEAKER, default=default): SelectSelector(
                        SelectSelectorConfig(options=list(self._voice.speakers))
                    )
                }
            ),
            description_placeholders={"voice": self._voice.name},
        )

    async def _async_loads(self, name: str) -> bool:
        """Return whether the embedded voice ``name`` loads and speaks (in a worker thread)."""
        file = next(f for f in self._files if f.voice.name == name)
        try:
            await LoadedPiperVoice.load(file)
        except (VoiceFileError, SpeechEngineMissingError):
            return False
        return True

    def _current(self) -> dict[str, Any]:
        """Return the reconfigured subentry's values, or nothing for a new one."""
        if self.source != SOURCE_RECONFIGURE:
            return {}
        return dict(self._get_reconfigure_subentry().data)

    def _finish(self, voice: TtsVoice, speaker: str | None) -> SubentryFlowResult:
        """Create (or update) the subentry for ``voice`` (and ``speaker``)."""
        data: dict[str, Any] = {
            **self._server,
            CONF_VOICE: voice.name,
            CONF_LANGUAGES: list(voice.languages),
        }
        if speaker is not None:
            data[CONF_SPEAKER] = speaker
        title = voice.name if speaker is None else f"{voice.name} ({speaker})"
        if CONF_ENGINE in data:
            title = f"{title} (embedded)"
        if self.source == SOURCE_RECONFIGURE:
            return self.async_update_and_abort(
                self._get_entry(), self._get_reconfigure_subentry(), title=title, data=data
            )
        return self.async_create_entry(title=title, data=data)
