"""Text to speech, each sentence spoken once it is complete: a Wyoming server or embedded Piper.

One speech path. When the text is our agent's turn (``voice/speaking.py`` says how a stream
finds it), the stream speaks the turn's own sentences, which its output pipeline cut and
cleaned (no markdown, URLs, emoji or the profile's tags), and may find them already under
way: the agent starts the voice its pipeline will use as soon as it knows it
(``async_speak_ahead``, from ``voice/speech_start.py``); the companion's own satellite
takes that audio itself, before HA opens its stream (``async_turn_audio``). Any other text
(an automation's ``tts.speak``, another agent's answer) runs through the same stages once
(``Engine.speech_text``). A cancelled turn's audio ends at once.

The audio leaves in the container the request asks for, made here: a streaming WAV, or MP3
(``engine/speech/containers.py``; lameenc, installed on demand by ``voice/mp3.py``). MP3 is
the default (``default_options``), so a caller that names no format (the browser, a media
player) gets it without HA's converter; a caller that names a sample rate (a satellite) is
converted by HA whatever the entity makes (HA 2026.2 to 2026.10 runs ffmpeg whenever a rate
is named; 2026.11 passes a streaming WAV through when the rate already matches).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import suppress
from typing import Any

from homeassistant.components import tts
from homeassistant.components.tts import TTSAudioResponse
from homeassistant.components.tts.entity import TTSAudioRequest  # not re-exported by tts
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .compat import converter_hold_seconds
from .const import CONF_LANGUAGES, CONF_SPEAKER, CONF_VOICE, DOMAIN, SUBENTRY_TTS
from .engine.errors import AudioFormatError, CompanionError
from .engine.speech import MP3, SPEECH_MARKS, WAV, AudioChunk, Container, TurnSpeech, encoded
from .engine.speech.satellite import PcmFormat
from .runtime import CompanionConfigEntry, add_per_subentry
from .voice.mp3 import async_mp3_ready
from .voice.sentence_timing import SpokenSentences
from .voice.speaking import SPEAKING_TURN
from .voice.subentry_voice import SubentryVoice
from .voice.tts_voices import supported_voices, unknown_voice_error

WAV_SIZES = (4, 40)
"""Where a WAV header states a size: the RIFF chunk's, the data chunk's (each: what follows)."""
MP3_WAIT = 10.0
"""How long a stream waits, just after setup, to learn whether MP3 can be made here."""


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one TTS entity per TTS subentry."""
    add_per_subentry(entry, SUBENTRY_TTS, CompanionTtsEntity, async_add_entities)


SAMPLE_OPTIONS = (
    tts.ATTR_PREFERRED_SAMPLE_RATE,
    tts.ATTR_PREFERRED_SAMPLE_CHANNELS,
    tts.ATTR_PREFERRED_SAMPLE_BYTES,
)


def converter_hold(options: Mapping[str, Any], container: Container) -> float:
    """Return the seconds of audio HA's converter holds back from this stream (0: none).

    HA converts when a sample rate, channel count or width is asked for (every satellite
    asks), or a format other than the one made; how much its converter holds before it
    lets audio out depends on the release (``compat.converter_hold_seconds``).
    """
    wanted = options.get(tts.ATTR_PREFERRED_FORMAT, MP3)
    converted = wanted != container or any(options.get(k) is not None for k in SAMPLE_OPTIONS)
    return converter_hold_seconds() if converted else 0.0


class CompanionTtsEntity(tts.TextToSpeechEntity):
    """A voice that speaks the reply sentence by sentence as the text streams in."""

    def __init__(self, entry: CompanionConfigEntry, subentry: ConfigSubentry) -> None:
        """Bind the entity to its server (or the embedded engine) and voice."""
        self.entry = entry
        self.subentry = subentry
        self._voice: SubentryVoice | None = None
        self._mp3 = False  # until lameenc is known to import
        self._mp3_known = asyncio.Event()
        self._attr_unique_id = subentry.subentry_id
        # The sample options are listed to be seen (``converter_hold``), not to be met: HA
        # converts whenever they are given, whatever the engine says it supports.
        self._attr_supported_options = [
            tts.ATTR_VOICE,
            CONF_SPEAKER,
            tts.ATTR_PREFERRED_FORMAT,
            *SAMPLE_OPTIONS,
        ]
        self._attr_default_options = {tts.ATTR_PREFERRED_FORMAT: MP3}
        self._attr_name = subentry.title  # HA's TTS manager needs the engine's own name
        self._attr_supported_languages = list(subentry.data.get(CONF_LANGUAGES) or ())
        if self._attr_supported_languages:
            self._attr_default_language = self._attr_supported_languages[0]
        self._attr_device_info = DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="Companion Agent",
            model=subentry.data[CONF_VOICE],
            entry_type=DeviceEntryType.SERVICE,
        )

    @property
    def voice(self) -> SubentryVoice:
        """Return what speaks this entity's sentences (made when the entity is added)."""
        assert self._voice is not None
        return self._voice

    async def async_added_to_hass(self) -> None:
        """Learn the voices, load the embedded one and the MP3 encoder, in the background."""
        await super().async_added_to_hass()
        self._voice = SubentryVoice(self.hass, self.entry.entry_id, self.subentry)
        self._voice.languages = tuple(self.supported_languages)
        self.entry.async_create_background_task(
            self.hass, self._async_warm_up(), f"{DOMAIN} tts warm-up {self.entity_id}"
        )

    async def _async_warm_up(self) -> None:
        """Get the voice ready so the first reply starts at once; a failure waits for it."""
        try:
            self._mp3 = await async_mp3_ready(self.hass)
        finally:
            self._mp3_known.set()
        with suppress(HomeAssistantError, CompanionError):  # the first request raises it
            await self.voice.synthesizer(self.voice.voice, self.voice.speaker)

    @callback
    def async_get_supported_voices(self, language: str) -> list[tts.Voice] | None:
        """Return the voices for ``language`` the server (or the folder) offered last."""
        return supported_voices(self.voice.voices, language)

    def async_supports_streaming_input(self) -> bool:
        """Take the text as it streams: each sentence is spoken once it is complete."""
        return True

    def async_speak_ahead(self, trace_id: str, options: Mapping[str, Any]) -> bool:
        """Start speaking turn ``trace_id`` before HA's stream asks (in the voice it will)."""
        voice, speaker = self._requested_voice(options)
        synthesis = self.voice.synthesis(voice, speaker)
        speech = self.entry.runtime_data.engine.speech
        return speech.start(trace_id, self.voice.key(voice, speaker), synthesis)

    async def async_stream_tts_audio(self, request: TTSAudioRequest) -> TTSAudioResponse:
        """Stream the audio, in the container asked for, as the sentences come."""
        voice, speaker = self._requested_voice(request.options)
        if not self._mp3_known.is_set():  # asked just after setup: MP3 if it can be made
            with suppress(TimeoutError):
                async with asyncio.timeout(MP3_WAIT):
                    await self._mp3_known.wait()
        container = self._container(request.options)
        turn = self.entry.runtime_data.engine.speech.get(SPEAKING_TURN.get())
        prime = converter_hold(request.options, container)
        audio = self._audio(request.message_gen, turn, voice, speaker, prime=prime)
        return TTSAudioResponse(container, encoded(audio, container))

    async def async_turn_audio(
        self, trace_id: str, options: Mapping[str, Any]
    ) -> tuple[PcmFormat, AsyncIterator[bytes]]:
        """Return turn ``trace_id``'s audio as PCM as it comes, for a speaker we feed ourselves.

        It is what HA's stream would play (the turn's sentences in the voice ``options`` ask
        for), with the same subtitles and sentence marks; it raises if there is none.
        """
        voice, speaker = self._requested_voice(options)
        turn = self.entry.runtime_data.engine.speech.get(trace_id)
        if turn is None:
            raise AudioFormatError(f"turn {trace_id} has no speech (any more)")
        audio = self._audio(_whole(""), turn, voice, speaker)
        first = await anext(audio, None)
        if first is None:
            raise AudioFormatError(f"turn {trace_id} had nothing to say")
        fmt = PcmFormat(rate=first.rate, width=first.width, channels=first.channels)

        async def pcm() -> AsyncGenerator[bytes]:
            """Yield the first chunk's audio, then the rest as it comes."""
            try:
                yield first.audio
                async for chunk in audio:
                    yield chunk.audio
            finally:
                await audio.aclose()

        return fmt, pcm()

    async def async_get_tts_audio(
        self, message: str, language: str, options: dict[str, Any]
    ) -> tts.TtsAudioType:
        """Speak the whole message sentence by sentence and return one WAV file."""
        voice, speaker = self._requested_voice(options)
        audio = self._audio(_whole(message), None, voice, speaker)
        data = bytearray()
        async for part in encoded(audio, WAV):
            data += part
        if not data:
            raise HomeAssistantError(translation_domain=DOMAIN, translation_key="tts_silent")
        for at in WAV_SIZES:
            struct.pack_into("<I", data, at, len(data) - at - 4)
        return WAV, bytes(data)

    async def _audio(
        self,
        message: AsyncIterator[str],
        turn: TurnSpeech | None,
        voice: str,
        speaker: str | None,
        *,
        prime: float = 0.0,
    ) -> AsyncGenerator[AudioChunk]:
        """Yield the audio: the turn's own sentences if the text is a turn's, else the text's.

        A stream not marked with its turn (``SPEAKING_TURN``) finds it by the text HA hands
        it first: the reply so far as the agent wrote it (``SpeechTurns.writing``), or a
        finished turn's whole speech (``SpeechTurns.spoken``). A turn's stream leaves HA's
        text to itself (read, so its writer never waits) and reads the turn's one synthesis
        in this voice. The stream heard first (``TurnAudio.primary``) tells the card's
        subtitles when each sentence begins to be heard (``SpokenSentences``) and a device
        that asked for the sentences' marks (``SPEECH_MARKS``) each chunk; a later reader
        of the same turn gets the same audio, quietly. HA's converter holds ``prime`` seconds
        of this stream's audio back (``TurnSpeech.listen``).
        """
        engine = self.entry.runtime_data.engine
        first = None
        if turn is None:
            first = await anext(message, None)
            if first is not None:
                turn = engine.speech.spoken(first) or engine.speech.writing(first)
        drain: asyncio.Task[None] | None = None
        synthesis = self.voice.synthesis(voice, speaker)
        marks = None
        if turn is not None:
            drain = self.entry.async_create_background_task(
                self.hass, _drain(message), f"{DOMAIN} tts drains HA's text"
            )
            heard = turn.listen(self.voice.key(voice, speaker), synthesis, prime=prime)
            audio = heard.chunks
            if heard.primary:
                audio = SpokenSentences(self.hass, self.entity_id, turn.texts).audio(audio)
                marks = SPEECH_MARKS.get()  # a device that asked where each sentence begins
        else:
            spoken = SpokenSentences(self.hass, self.entity_id)
            sentences = spoken.texts(engine.speech_text(_prepend(first, message)))
            audio = spoken.audio(synthesis(sentences))
            marks = SPEECH_MARKS.get()
        try:
            async for chunk in audio:
                if marks is not None:
                    marks.add(chunk)
                yield chunk
        finally:
            if drain is not None:
                drain.cancel()
            await audio.aclose()

    def _container(self, options: Mapping[str, Any]) -> Container:
        """Return the container to make: MP3 when asked and possible, else WAV (HA converts)."""
        wanted = options.get(tts.ATTR_PREFERRED_FORMAT)
        return MP3 if wanted == MP3 and self._mp3 else WAV

    def _requested_voice(self, options: Mapping[str, Any]) -> tuple[str, str | None]:
        """Return the voice and speaker a request asks for, else the subentry's."""
        own = self.voice
        voice = options.get(tts.ATTR_VOICE) or own.voice
        speaker = options.get(CONF_SPEAKER) or None
        if not isinstance(voice, str) or not isinstance(speaker, str | None):
            raise unknown_voice_error(str(voice), own.voices, self.supported_languages)
        if speaker is None and voice == own.voice:
            speaker = own.speaker
        return voice, speaker


async def _drain(message: AsyncIterator[str]) -> None:
    """Read HA's text to its end, keeping none of it."""
    async for _text in message:
        pass


async def _whole(message: str) -> AsyncIterator[str]:
    """Yield the whole message at once."""
    yield message


async def _prepend(first: str | None, rest: AsyncIterator[str]) -> AsyncIterator[str]:
    """Yield ``first`` (if any), then ``rest``."""
    if first is not None:
        yield first
    async for text in rest:
        yield text
