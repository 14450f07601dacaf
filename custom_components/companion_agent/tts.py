"""Text to speech, each sentence spoken once it is complete: a Wyoming server or embedded Piper.

The reply's text runs through the engine's output pipeline first (``voice/tts_audio``), so
the voice hears each sentence's ``tts_text``: no markdown, URLs, emoji or action tags. Which
synthesizer speaks
is the subentry's choice (``_async_synthesizer``); a request may pick another of its voices.
A turn's first sentence may already be under way when HA opens the stream
(``speech_start.py``): the stream plays that audio instead of asking again, and ends at once
if the turn is cancelled.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import suppress
from typing import Any

from homeassistant.components import tts
from homeassistant.components.tts import TTSAudioResponse
from homeassistant.components.tts.entity import TTSAudioRequest  # not re-exported by tts
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import (
    CONF_ENGINE,
    CONF_LANGUAGES,
    CONF_SPEAKER,
    CONF_VOICE,
    DOMAIN,
    ENGINE_EMBEDDED,
    SUBENTRY_TTS,
)
from .engine.errors import (
    CompanionError,
    SpeechEngineMissingError,
    SpeechError,
    SpeechVoiceNotFoundError,
    VoiceFileError,
)
from .engine.speech import (
    AudioChunk,
    EmbeddedPiper,
    PiperVoiceFolder,
    SpeechKey,
    Synthesis,
    Synthesizer,
    TtsInfo,
    TtsVoice,
    WyomingTTS,
)
from .repairs import (
    async_clear_missing_voice,
    async_report_bad_voice_file,
    async_report_missing_voice,
)
from .runtime import CompanionConfigEntry, add_per_subentry
from .voice.embedded_piper import async_require_piper, voices_folder
from .voice.sentence_timing import SpokenSentences
from .voice.tts_audio import message_sentences, streamed_sentences, wav_stream, whole_wav
from .voice.tts_voices import offered_voice, supported_voices, unknown_voice_error

# How long a server that had our voice is trusted without asking again (a failure forgets it).
SERVER_CHECK_TTL = 60.0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one TTS entity per TTS subentry."""
    add_per_subentry(entry, SUBENTRY_TTS, CompanionTtsEntity, async_add_entities)


class CompanionTtsEntity(tts.TextToSpeechEntity):
    """A voice that speaks the reply sentence by sentence as the text streams in."""

    def __init__(self, entry: CompanionConfigEntry, subentry: ConfigSubentry) -> None:
        """Bind the entity to its server (or the embedded engine) and voice."""
        self.entry = entry
        self.subentry = subentry
        data = subentry.data
        self._embedded = data.get(CONF_ENGINE) == ENGINE_EMBEDDED
        self._host: str = data.get(CONF_HOST, "")
        self._port: int = int(data.get(CONF_PORT, 0))
        self._voice: str = data[CONF_VOICE]
        self._speaker: str | None = data.get(CONF_SPEAKER)
        self._voices: tuple[TtsVoice, ...] = ()  # as last listed: the server's or the folder's
        self._folder: PiperVoiceFolder | None = None
        self._checked: tuple[float, TtsInfo] | None = None  # the server's last good answer
        self._attr_unique_id = subentry.subentry_id
        self._attr_supported_options = [tts.ATTR_VOICE, CONF_SPEAKER]
        self._attr_name = subentry.title  # HA's TTS manager needs the engine's own name
        self._attr_supported_languages = list(data.get(CONF_LANGUAGES) or ())
        if self._attr_supported_languages:
            self._attr_default_language = self._attr_supported_languages[0]
        self._attr_device_info = DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="Companion Agent",
            model=self._voice,
            entry_type=DeviceEntryType.SERVICE,
        )

    async def async_added_to_hass(self) -> None:
        """Learn the voices, and load the embedded one, in the background."""
        await super().async_added_to_hass()
        if self._embedded:
            self._folder = PiperVoiceFolder(voices_folder(self.hass))
        self.entry.async_create_background_task(
            self.hass, self._async_warm_up(), f"{DOMAIN} tts warm-up {self.entity_id}"
        )

    async def _async_warm_up(self) -> None:
        """Get the voice ready so the first reply starts at once; a failure waits for it."""
        with suppress(HomeAssistantError, CompanionError):  # the first request raises it
            await self._async_synthesizer(self._voice, self._speaker)

    @callback
    def async_get_supported_voices(self, language: str) -> list[tts.Voice] | None:
        """Return the voices for ``language`` the server (or the folder) offered last."""
        return supported_voices(self._voices, language)

    def async_supports_streaming_input(self) -> bool:
        """Take the text as it streams: each sentence is spoken once it is complete."""
        return True

    @property
    def speech_voice(self) -> str:
        """Return what tells this voice apart from others among the speech head starts."""
        return self._speech_key(self._voice, self._speaker)

    async def async_stream_tts_audio(self, request: TTSAudioRequest) -> TTSAudioResponse:
        """Stream a WAV header and each sentence's PCM as it comes.

        The voice is checked only when a sentence must be synthesised here: a first
        sentence already under way (a head start) plays without waiting for that check.
        """
        voice, speaker = self._requested_voice(request.options)
        spoken = SpokenSentences(self.hass, self.entity_id)  # the card's subtitles follow it
        sentences = spoken.texts(streamed_sentences(request.message_gen))
        heads = self.entry.runtime_data.engine.speech_starts
        synthesis = self._synthesis(voice, speaker)
        playback = self.entry.runtime_data.playback
        audio = heads.speak(
            self._speech_key(voice, speaker), sentences, synthesis, playback.async_report_duration
        )
        return TTSAudioResponse("wav", wav_stream(self._guarded(spoken.audio(audio), voice)))

    def async_speak_ahead(self, text: str, trace_id: str) -> bool:
        """Start synthesising a turn's first sentence before HA's stream asks for it."""
        key = SpeechKey.of(self.speech_voice, text)
        synthesis = self._synthesis(self._voice, self._speaker)
        return self.entry.runtime_data.engine.speech_starts.start(key, trace_id, synthesis)

    def _speech_key(self, voice: str, speaker: str | None) -> str:
        """Return the head-start key of ``voice`` (and ``speaker``) spoken by this entity."""
        where = "embedded" if self._embedded else f"{self._host}:{self._port}"
        return f"{self.entity_id}|{where}|{voice}|{speaker or ''}"

    def _synthesis(self, voice: str, speaker: str | None) -> Synthesis:
        """Return how ``voice`` speaks sentences: checked, on a connection of their own."""

        async def synthesize(sentences: AsyncIterator[str]) -> AsyncGenerator[AudioChunk]:
            """Check the voice, then speak ``sentences``."""
            audio = (await self._async_synthesizer(voice, speaker)).synthesize(sentences)
            try:
                async for chunk in audio:
                    yield chunk
            finally:
                await audio.aclose()

        return synthesize

    async def async_get_tts_audio(
        self, message: str, language: str, options: dict[str, Any]
    ) -> tts.TtsAudioType:
        """Speak the whole message sentence by sentence and return one WAV file."""
        voice, speaker = self._requested_voice(options)
        synthesizer = await self._async_synthesizer(voice, speaker)
        audio = synthesizer.synthesize(message_sentences(message))
        wav = await whole_wav(self._guarded(audio, voice))
        if wav is None:
            raise HomeAssistantError(translation_domain=DOMAIN, translation_key="tts_silent")
        return "wav", wav

    def _requested_voice(self, options: Mapping[str, Any]) -> tuple[str, str | None]:
        """Return the voice and speaker a request asks for, else the subentry's."""
        voice = options.get(tts.ATTR_VOICE) or self._voice
        speaker = options.get(CONF_SPEAKER) or None
        if not isinstance(voice, str) or not isinstance(speaker, str | None):
            raise unknown_voice_error(str(voice), self._voices, self.supported_languages)
        if speaker is None and voice == self._voice:
            speaker = self._speaker
        return voice, speaker

    async def _async_synthesizer(self, voice: str, speaker: str | None) -> Synthesizer:
        """Return what speaks ``voice``: the subentry's server, or embedded Piper."""
        if self._embedded:
            return await self._async_embedded(voice, speaker)
        return await self._async_wyoming(voice, speaker)

    async def _async_wyoming(self, voice: str, speaker: str | None) -> WyomingTTS:
        """Return a client for ``voice``, or raise: the server is asked once a minute."""
        if self._checked is not None and time.monotonic() - self._checked[0] < SERVER_CHECK_TTL:
            info = self._checked[1]
        else:
            try:
                info = await WyomingTTS(self._host, self._port).describe()
            except SpeechError as err:
                raise self._unreachable() from err
            self._checked = (time.monotonic(), info)
        self._voices = info.voices
        self._check_voice(voice, speaker)
        return WyomingTTS(
            self._host,
            self._port,
            voice=voice,
            speaker=speaker,
            streaming=info.supports_streaming,
        )

    async def _async_embedded(self, voice: str, speaker: str | None) -> EmbeddedPiper:
        """Return embedded Piper with ``voice`` from the folder (loaded once), or raise."""
        assert self._folder is not None  # made when the entity was added
        try:
            await async_require_piper(self.hass)
            self._voices = tuple(file.voice for file in await self._folder.voices())
            self._check_voice(voice, speaker)
            return EmbeddedPiper(await self._folder.load(voice), speaker)
        except SpeechEngineMissingError as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key="tts_piper_unavailable"
            ) from err
        except VoiceFileError as err:
            if voice == self._voice:
                async_report_bad_voice_file(
                    self.hass, self.entry.entry_id, self.subentry.subentry_id, voice, str(err.path)
                )
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="tts_voice_file",
                translation_placeholders={"voice": voice, "path": str(err.path)},
            ) from err

    def _check_voice(self, voice: str, speaker: str | None) -> None:
        """Raise unless ``voice`` (and ``speaker``) is on offer; our own voice gets an issue."""
        if voice == self._voice and all(v.name != voice for v in self._voices):
            if not self._embedded:
                self._checked = None
                raise self._voice_missing()
            return  # loading it says what is wrong with the file
        offered_voice(self._voices, voice, speaker, self.supported_languages)

    async def _guarded(
        self, audio: AsyncGenerator[AudioChunk], voice: str
    ) -> AsyncGenerator[AudioChunk]:
        """Pass ``voice``'s audio on; map speech errors to HA errors; close when done."""
        try:
            async for chunk in audio:
                yield chunk
        except SpeechVoiceNotFoundError as err:
            self._checked = None
            if voice == self._voice:
                raise self._voice_missing() from err
            raise unknown_voice_error(voice, self._voices, self.supported_languages) from err
        except SpeechError as err:
            self._checked = None
            raise self._unreachable() from err
        finally:
            await audio.aclose()
        if voice == self._voice:
            async_clear_missing_voice(self.hass, self.subentry.subentry_id)

    def _unreachable(self) -> HomeAssistantError:
        """Return the error for a server that cannot be reached."""
        return HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="tts_unreachable",
            translation_placeholders={"server": f"{self._host}:{self._port}"},
        )

    def _voice_missing(self) -> HomeAssistantError:
        """Raise the repair issue for our voice and return the error to raise."""
        server = f"{self._host}:{self._port}"
        async_report_missing_voice(
            self.hass, self.entry.entry_id, self.subentry.subentry_id, self._voice, server
        )
        return HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="tts_voice_missing",
            translation_placeholders={"voice": self._voice, "server": server},
        )
