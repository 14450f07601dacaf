"""Text to speech through a Wyoming server (piper): each sentence is sent once it is complete.

The reply's text runs through the engine's output pipeline first, so Piper hears each
sentence's ``tts_text``: no markdown, URLs, emoji or action tags. A turn's first sentence
may already be under way when HA opens the stream (``speech_start.py``): the stream plays
that audio instead of asking again, and ends at once if the turn is cancelled.
"""

from __future__ import annotations

import io
import time
import wave
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from homeassistant.components import tts
from homeassistant.components.tts import TTSAudioResponse
from homeassistant.components.tts.entity import TTSAudioRequest  # not re-exported by tts
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import CONF_LANGUAGES, CONF_SPEAKER, CONF_VOICE, DOMAIN, EMOTIONS, SUBENTRY_TTS
from .engine.errors import SpeechError, SpeechVoiceNotFoundError
from .engine.events import SentenceOutput, TextDelta
from .engine.pipeline import PipelineConfig, build_pipeline
from .engine.speech import AudioChunk, WyomingTTS
from .engine.speech.head_start import SpeechKey
from .engine.turn.runner import FIRST_CLAUSE_CUT
from .repairs import async_clear_missing_voice, async_report_missing_voice
from .runtime import CompanionConfigEntry, add_per_subentry

# Emotion tags are actions, never words; the rest of the text is cleaned for speech. The
# first sentence is cut as the turn cuts it, so a sentence spoken ahead is found again.
PIPELINE_CONFIG = PipelineConfig(action_tags=EMOTIONS, faster_first_response=FIRST_CLAUSE_CUT)
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
    """A Wyoming voice that speaks the reply sentence by sentence as the text streams in."""

    def __init__(self, entry: CompanionConfigEntry, subentry: ConfigSubentry) -> None:
        """Bind the entity to its server and voice."""
        self.entry = entry
        self.subentry = subentry
        data = subentry.data
        self._host: str = data[CONF_HOST]
        self._port: int = int(data[CONF_PORT])
        self._voice: str = data[CONF_VOICE]
        self._speaker: str | None = data.get(CONF_SPEAKER)
        self._checked: tuple[float, WyomingTTS] | None = None
        self._attr_unique_id = subentry.subentry_id
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

    def async_supports_streaming_input(self) -> bool:
        """Take the text as it streams: each sentence is spoken once it is complete."""
        return True

    @property
    def speech_voice(self) -> str:
        """Return what tells this voice apart from others among the speech head starts."""
        return f"{self.entity_id}|{self._host}:{self._port}|{self._voice}|{self._speaker or ''}"

    async def async_stream_tts_audio(self, request: TTSAudioRequest) -> TTSAudioResponse:
        """Stream a WAV header and each sentence's PCM as it comes.

        The server is checked only when a sentence must be synthesised here: a first
        sentence already under way (a head start) plays without waiting for that check.
        """
        sentences = _sentences(_deltas(request.message_gen))
        heads = self.entry.runtime_data.speech_starts
        audio = heads.speak(self.speech_voice, sentences, self._synthesis)
        return TTSAudioResponse("wav", self._wav_stream(audio))

    def async_speak_ahead(self, text: str, trace_id: str) -> bool:
        """Start synthesising a turn's first sentence before HA's stream asks for it."""
        key = SpeechKey.of(self.speech_voice, text)
        return self.entry.runtime_data.speech_starts.start(key, trace_id, self._synthesis)

    async def _synthesis(self, sentences: AsyncIterator[str]) -> AsyncGenerator[AudioChunk]:
        """Check the server, then speak ``sentences`` on a connection of their own."""
        audio = (await self._async_client()).synthesize(sentences)
        try:
            async for chunk in audio:
                yield chunk
        finally:
            await audio.aclose()

    async def async_get_tts_audio(
        self, message: str, language: str, options: dict[str, Any]
    ) -> tts.TtsAudioType:
        """Speak the whole message sentence by sentence and return one WAV file."""
        client = await self._async_client()
        with io.BytesIO() as wav_io:
            wav_file: wave.Wave_write | None = None
            async for chunk in self._guarded(client.synthesize(_sentences(_whole(message)))):
                if wav_file is None:
                    wav_file = _open_wav(wav_io, chunk)
                wav_file.writeframes(chunk.audio)
            if wav_file is None:
                raise HomeAssistantError(translation_domain=DOMAIN, translation_key="tts_silent")
            wav_file.close()
            return "wav", wav_io.getvalue()

    async def _async_client(self) -> WyomingTTS:
        """Return a client for our voice: the server is asked what it offers once a minute."""
        if self._checked is not None and time.monotonic() - self._checked[0] < SERVER_CHECK_TTL:
            return self._checked[1]
        probe = WyomingTTS(self._host, self._port)
        try:
            info = await probe.describe()
        except SpeechError as err:
            raise self._unreachable() from err
        if info.voice(self._voice) is None:
            raise self._voice_missing()
        client = WyomingTTS(
            self._host,
            self._port,
            voice=self._voice,
            speaker=self._speaker,
            streaming=info.supports_streaming,
        )
        self._checked = (time.monotonic(), client)
        return client

    async def _wav_stream(self, audio: AsyncGenerator[AudioChunk]) -> AsyncGenerator[bytes]:
        """Yield a streaming WAV header (no frame count) before the first PCM, then the PCM."""
        header_sent = False
        async for chunk in self._guarded(audio):
            if not header_sent:
                with io.BytesIO() as wav_io:
                    _open_wav(wav_io, chunk).close()
                    yield wav_io.getvalue()
                header_sent = True
            yield chunk.audio

    async def _guarded(self, audio: AsyncGenerator[AudioChunk]) -> AsyncGenerator[AudioChunk]:
        """Pass the audio on; map speech errors to HA errors; close the socket when done."""
        try:
            async for chunk in audio:
                yield chunk
        except SpeechVoiceNotFoundError as err:
            self._checked = None
            raise self._voice_missing() from err
        except SpeechError as err:
            self._checked = None
            raise self._unreachable() from err
        finally:
            await audio.aclose()
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


async def _deltas(message_gen: AsyncIterator[str]) -> AsyncIterator[TextDelta]:
    """Wrap HA's text chunks as the pipeline's text deltas."""
    async for text in message_gen:
        yield TextDelta(text=text, model_text=text)


async def _whole(message: str) -> AsyncIterator[TextDelta]:
    """Yield the whole message as one text delta."""
    yield TextDelta(text=message, model_text=message)


async def _sentences(deltas: AsyncIterator[TextDelta]) -> AsyncIterator[str]:
    """Yield each finished sentence's speakable text, skipping the empty ones."""
    async for item in build_pipeline(PIPELINE_CONFIG)(deltas):
        if isinstance(item, SentenceOutput) and item.tts_text:
            yield item.tts_text


def _open_wav(wav_io: io.BytesIO, chunk: AudioChunk) -> wave.Wave_write:
    """Open a WAV writer on ``wav_io`` in the chunk's format."""
    wav_file = wave.open(wav_io, "wb")  # noqa: SIM115 - the caller closes it
    wav_file.setframerate(chunk.rate)
    wav_file.setsampwidth(chunk.width)
    wav_file.setnchannels(chunk.channels)
    return wav_file
