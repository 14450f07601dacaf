"""Speech to text through a Wyoming server (faster-whisper): the audio is sent as it comes.

HA's Assist pipeline expects a failed transcription as a SpeechResult in the ERROR state
(it logs a raised exception as unexpected), so an unreachable or misbehaving server gives
that, with a warning in the log naming the server.

From HA 2026.5 an STT entity says how it wants its audio (``audio_processing``, a
``stt.SpeechAudioProcessing``): ours relies on the pipeline's voice activity detection
(the Wyoming server does not end speech itself) and takes HA's auto gain, but not its
noise suppression: Whisper was trained on noisy speech, and suppression's artefacts cost
it more words than the noise does.

With voices enrolled it also says who spoke (``voice/voiceprints.py``), from the same audio.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import replace
from typing import Any

from homeassistant.components import stt
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util import language as language_util

from .const import CONF_LANGUAGES, CONF_MODEL, DOMAIN, LOGGER, SUBENTRY_STT
from .engine.errors import SpeechError
from .engine.speech import WyomingSTT
from .runtime import CompanionConfigEntry, add_per_subentry
from .voice.speaking import heard_voice
from .voice.voiceprints import IDENTIFY_TIMEOUT, UNHEARD, HeardAudio, HeardVoice


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one STT entity per STT subentry."""
    add_per_subentry(entry, SUBENTRY_STT, CompanionSttEntity, async_add_entities)


class CompanionSttEntity(stt.SpeechToTextEntity):
    """A Wyoming ASR model that transcribes what the Assist pipeline hears."""

    def __init__(self, entry: CompanionConfigEntry, subentry: ConfigSubentry) -> None:
        """Bind the entity to its server, model and languages."""
        self.entry = entry
        self.subentry = subentry
        data = subentry.data
        self._host: str = data[CONF_HOST]
        self._port: int = int(data[CONF_PORT])
        self._model: str | None = data.get(CONF_MODEL)
        self._languages: list[str] = list(data.get(CONF_LANGUAGES) or ())
        self._attr_unique_id = subentry.subentry_id
        self._attr_name = subentry.title
        self._attr_device_info = DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="Companion Agent",
            model=self._model,
            entry_type=DeviceEntryType.SERVICE,
        )

    @property
    def audio_processing(self) -> Any:
        """Return how HA should prepare our audio (HA 2026.5 on); None before, unread."""
        processing = getattr(stt, "SpeechAudioProcessing", None)
        if processing is None:
            return None
        return processing(
            requires_external_vad=True,
            prefers_auto_gain_enabled=True,
            prefers_noise_reduction_enabled=False,
        )

    @property
    def supported_languages(self) -> list[str]:
        """Return the languages chosen for this model; HA's own when it names none.

        A server whose model lists no languages still transcribes: the pipeline may use it
        in HA's language, and the server chooses (no language is sent).
        """
        return self._languages or [self.hass.config.language]

    @property
    def supported_formats(self) -> list[stt.AudioFormats]:
        """Return WAV: the pipeline sends raw PCM."""
        return [stt.AudioFormats.WAV]

    @property
    def supported_codecs(self) -> list[stt.AudioCodecs]:
        """Return PCM."""
        return [stt.AudioCodecs.PCM]

    @property
    def supported_bit_rates(self) -> list[stt.AudioBitRates]:
        """Return 16-bit samples."""
        return [stt.AudioBitRates.BITRATE_16]

    @property
    def supported_sample_rates(self) -> list[stt.AudioSampleRates]:
        """Return 16 kHz, what the pipeline records and Whisper hears."""
        return [stt.AudioSampleRates.SAMPLERATE_16000]

    @property
    def supported_channels(self) -> list[stt.AudioChannels]:
        """Return mono."""
        return [stt.AudioChannels.CHANNEL_MONO]

    async def async_process_audio_stream(
        self, metadata: stt.SpeechMetadata, stream: AsyncIterable[bytes]
    ) -> stt.SpeechResult:
        """Send the audio to the server as it comes and return what it heard.

        With voices enrolled, the audio is kept too, and the speaker's voice is matched as
        soon as it ends, while the server transcribes; who spoke is noted for this run's
        conversation stage (``heard_voice``). A voice not matched in time is the household's.
        """
        client = WyomingSTT(self._host, self._port, model=self._model)
        voices = self.entry.runtime_data.voices
        listen = voices.listening and _is_plain_pcm(metadata)
        heard = HeardAudio()
        matching: list[asyncio.Task[HeardVoice]] = []

        async def kept(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
            """Yield the audio on, keep it, and start matching its voice once it ends."""
            async for chunk in chunks:
                heard.add(chunk)
                yield chunk
            matching.append(
                self.hass.async_create_task(
                    voices.async_hear(heard.pcm()), f"{DOMAIN} match a voice", eager_start=True
                )
            )

        try:
            transcription = await client.transcribe(
                kept(stream) if listen else stream,
                rate=int(metadata.sample_rate),
                width=int(metadata.bit_rate) // 8,
                channels=int(metadata.channel),
                language=self._server_language(metadata.language),
            )
        except SpeechError as err:
            for task in matching:
                task.cancel()
            LOGGER.warning("Speech to text failed: %s", err)
            return stt.SpeechResult(None, stt.SpeechResultState.ERROR)
        text = transcription.text.strip()
        if listen:
            matched = await _matched(matching)
            heard_voice(replace(matched, text=text, at=time.monotonic()))
        return stt.SpeechResult(text, stt.SpeechResultState.SUCCESS)

    def _server_language(self, language: str) -> str | None:
        """Return the model's language closest to ``language``; None lets the server choose."""
        matches = language_util.matches(language, self._languages, country=self.hass.config.country)
        return matches[0] if matches else None


def _is_plain_pcm(metadata: stt.SpeechMetadata) -> bool:
    """Say whether the audio is what the speaker encoder hears: 16 kHz, 16-bit mono PCM."""
    return (
        metadata.codec == stt.AudioCodecs.PCM
        and metadata.sample_rate == stt.AudioSampleRates.SAMPLERATE_16000
        and metadata.bit_rate == stt.AudioBitRates.BITRATE_16
        and metadata.channel == stt.AudioChannels.CHANNEL_MONO
    )


async def _matched(matching: list[asyncio.Task[HeardVoice]]) -> HeardVoice:
    """Return who spoke, as matched once the audio ended; the household if not in time."""
    if not matching:  # the server answered before the audio ended
        return UNHEARD
    try:
        async with asyncio.timeout(IDENTIFY_TIMEOUT):
            return await matching[0]
    except TimeoutError:
        LOGGER.debug(
            "Matching a voice took over %.0f s; the turn is the household's", IDENTIFY_TIMEOUT
        )
        return UNHEARD
