"""Text to speech, each sentence spoken once it is complete: a Wyoming server or embedded Piper.

One speech path. When the text is our agent's turn (``voice/speaking.py`` says how a stream
finds it), the stream speaks the turn's own sentences, which its output pipeline cut and
cleaned (no markdown, URLs, emoji or the profile's tags), and may find them already under
way. Any other text (an automation's ``tts.speak``, another agent's answer) runs through the
same stages once (``Engine.speech_text``). A cancelled turn's audio ends at once.

Speech ahead of HA: HA's Assist pipeline opens the TTS stream only once the reply holds more
than 60 characters (``STREAM_RESPONSE_CHARS`` in ``assist_pipeline``, 2026.2.3;
``compat.stream_response_chars`` reads HA's own), or text and then a tool call, or, for a
shorter reply, when the agent has finished. Our agent and our voices live in one
integration, so when the turn's pipeline speaks with one of our voices
(``async_pipeline_voice``), that voice starts on the turn's sentences at once
(``async_speak_ahead``: the server check now, each sentence the moment it exists), and HA's
stream, when it opens, plays what was made. A text conversation (``conversation.process``)
has no pipeline listening to its ChatLog: nothing starts. A wrong voice could never play (a
stream asking for another voice speaks the sentences again in its own); it would only waste
a synthesis, bounded in ``SpeechTurns``. On the companion's own satellite the run waiting
for the conversation's answer (``SpeakingTurns``) is handed the turn's audio as it starts
(``async_turn_audio``), and the first sentence plays while HA still waits for its 60
characters; HA still opens its stream and runs our voice for it, but that stream speaks
nothing: a turn is spoken once.

Each voice subentry speaks through ``SubentryVoice``: a Wyoming server is asked for its
voices once a minute (one question at a time: a request that comes while the warm-up asks
waits for that answer instead of asking again); embedded Piper loads its voice from the
folder (kept loaded). A voice the server or folder lacks, a server that cannot be reached,
a voice file that will not load: each is an HA error with a translation key, and our own
voice going missing raises a repair issue.

The audio leaves in the container the request asks for, made here: a streaming WAV, or MP3
(``engine/speech/containers.py``; lameenc, installed on demand by ``async_mp3_ready``). MP3
is the default (``default_options``), so a caller that names no format (the browser, a media
player) gets it without HA's converter; a caller that names a sample rate (a satellite) is
converted by HA whatever the entity makes (HA 2026.2 to 2026.10 runs ffmpeg whenever a rate
is named; 2026.11 passes a streaming WAV through when the rate already matches). lameenc is
not in manifest.json: it has wheels for glibc (HA Core, HA Supervised) but none for musl
(HA OS, the container) and no source release, and an integration whose manifest requirement
cannot install does not load at all. HA's own requirement installer fetches it when a voice
entity is added; where it cannot, the voice gives WAV when MP3 is asked for, and HA converts
it with ffmpeg as it does for any engine.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from contextlib import suppress
from functools import partial
from typing import Any

from homeassistant.components import conversation, tts
from homeassistant.components.tts import TTSAudioResponse
from homeassistant.components.tts.entity import TTSAudioRequest  # not re-exported by tts
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.requirements import RequirementsNotFound, async_process_requirements

from .compat import async_get_entity, converter_hold_seconds
from .const import (
    CONF_ENGINE,
    CONF_LANGUAGES,
    CONF_SPEAKER,
    CONF_VOICE,
    DOMAIN,
    ENGINE_EMBEDDED,
    LAMEENC_REQUIREMENT,
    LOGGER,
    SUBENTRY_TTS,
)
from .engine.chars import clean_text
from .engine.errors import (
    AudioFormatError,
    CompanionError,
    SpeechEngineMissingError,
    SpeechError,
    SpeechVoiceNotFoundError,
    VoiceFileError,
)
from .engine.speech import (
    MP3,
    WAV,
    AudioChunk,
    Container,
    EmbeddedPiper,
    PiperVoiceFolder,
    Synthesis,
    Synthesizer,
    TtsInfo,
    TtsVoice,
    TurnSpeech,
    WyomingTTS,
    encoded,
    mp3_available,
)
from .engine.speech.satellite import PcmFormat
from .engine.turn.handle import Turn
from .repairs import (
    async_clear_missing_voice,
    async_report_bad_voice_file,
    async_report_missing_voice,
)
from .runtime import CompanionConfigEntry, CompanionRuntime, add_per_subentry
from .voice.embedded_piper import async_require_piper, voices_folder
from .voice.satellite.run import SatelliteRun
from .voice.sentence_timing import SpokenSentences
from .voice.speaking import ASSIST_PIPELINE, running_voice, satellite_of, satellite_voice, speaking

WAV_SIZES = (4, 40)
"""Where a WAV header states a size: the RIFF chunk's, the data chunk's (each: what follows)."""
MP3_WAIT = 10.0
"""How long a stream waits, just after setup, to learn whether MP3 can be made here."""
SERVER_CHECK_TTL = 60.0
"""How long a server that had our voice is trusted without asking again (a failure forgets)."""
MAX_NAMED = 20
"""Voices named in an error; a server may offer hundreds."""


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one TTS entity per TTS subentry."""
    add_per_subentry(entry, SUBENTRY_TTS, CompanionTtsEntity, async_add_entities)


type OurVoice = tuple[CompanionTtsEntity, dict[str, str]]
"""One of our TTS entities, and the options the pipeline asks it for (its voice)."""


@callback
def async_pipeline_voice(
    hass: HomeAssistant, user_input: conversation.ConversationInput
) -> OurVoice | None:
    """Return our voice the turn's pipeline speaks with; None: not ours, or not known.

    A satellite's run: its pipeline's voice; a run without one: the running pipeline's
    voice (``voice/speaking.py`` says how each is found).
    """
    if ASSIST_PIPELINE not in hass.config.components:
        return None
    satellite = satellite_of(hass, user_input.satellite_id, user_input.device_id)
    if satellite is not None:
        voice = satellite_voice(hass, satellite)
    else:
        voice = running_voice(hass, user_input.context)
    if voice is None:
        return None
    entity = async_get_entity(hass, voice.engine)
    if not isinstance(entity, CompanionTtsEntity) or entity.hass is not hass:
        return None
    return entity, voice.options


@callback
def async_speak_ahead(
    hass: HomeAssistant, chat_log: conversation.ChatLog, turn: Turn, voice: OurVoice | None
) -> bool:
    """Start the turn's speech in ``voice``, the one its pipeline will ask for, if ours.

    A run of our own satellite that waits for the conversation's answer plays it at once.
    """
    if chat_log.delta_listener is None or voice is None:  # no TTS stream will open, or not ours
        return False
    entity, options = voice
    if not entity.async_speak_ahead(turn.trace_id, options):
        return False
    if (run := _waiting_run(hass, chat_log.conversation_id)) is not None:
        run.speak_ahead(partial(entity.async_turn_audio, turn.trace_id, options))
    return True


@callback
def _waiting_run(hass: HomeAssistant, conversation_id: str) -> SatelliteRun | None:
    """Return the run of our satellites that waits for ``conversation_id``'s answer, if any.

    Each entry's runtime holds its own satellites' runs (``SpeakingTurns``); a satellite of
    one entry may speak with another entry's agent and voice.
    """
    for entry in hass.config_entries.async_entries(DOMAIN):
        runtime = getattr(entry, "runtime_data", None)  # unset until the entry is set up
        if isinstance(runtime, CompanionRuntime) and (run := runtime.speaking.run(conversation_id)):
            return run
    return None


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
        turn = self.entry.runtime_data.engine.speech.get(speaking().trace_id)
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

        A stream not marked with its turn (``speaking().trace_id``) finds it by the text HA
        hands it first: the reply so far as the agent wrote it (``SpeechTurns.writing``), or a
        finished turn's whole speech (``SpeechTurns.spoken``). A turn's stream leaves HA's
        text to itself (read, so its writer never waits) and reads the turn's one synthesis
        in this voice. The stream heard first (``TurnAudio.primary``) tells the card's
        subtitles when each sentence begins to be heard (``SpokenSentences``) and a device
        that asked for the sentences' marks (``speaking().marks``) each chunk; a later reader
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
                marks = speaking().marks  # a device that asked where each sentence begins
        else:
            spoken = SpokenSentences(self.hass, self.entity_id)
            sentences = spoken.texts(engine.speech_text(_prepend(first, message)))
            audio = spoken.audio(synthesis(sentences))
            marks = speaking().marks
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


class SubentryVoice:
    """The subentry's synthesizer for a voice (its own or one a request picks), checked."""

    def __init__(self, hass: HomeAssistant, entry_id: str, subentry: ConfigSubentry) -> None:
        """Bind to the subentry's server (or the voices folder) and voice."""
        self._hass = hass
        self._entry_id = entry_id
        self._subentry = subentry
        data = subentry.data
        self.embedded = data.get(CONF_ENGINE) == ENGINE_EMBEDDED
        self.host: str = data.get(CONF_HOST, "")
        self.port: int = int(data.get(CONF_PORT, 0))
        self.voice: str = data[CONF_VOICE]
        self.speaker: str | None = data.get(CONF_SPEAKER)
        self.voices: tuple[TtsVoice, ...] = ()
        """The voices on offer, as last listed: the server's or the folder's."""
        self.languages: tuple[str, ...] = ()
        self._folder = PiperVoiceFolder(voices_folder(hass)) if self.embedded else None
        self._checked: tuple[float, TtsInfo] | None = None  # the server's last good answer
        self._checking: asyncio.Future[TtsInfo] | None = None

    @property
    def server(self) -> str:
        """Return where the voice speaks: ``host:port``, or ``embedded``."""
        return "embedded" if self.embedded else f"{self.host}:{self.port}"

    def key(self, voice: str, speaker: str | None) -> str:
        """Return what tells this voice (and speaker) apart from every other one's audio."""
        return f"{self._subentry.subentry_id}|{self.server}|{voice}|{speaker or ''}"

    def synthesis(self, voice: str, speaker: str | None) -> Synthesis:
        """Return how ``voice`` speaks sentences: checked first, on a connection of its own."""

        async def synthesize(sentences: AsyncIterator[str]) -> AsyncGenerator[AudioChunk]:
            """Check the voice, then speak ``sentences``; HA errors for what fails."""
            audio = (await self.synthesizer(voice, speaker)).synthesize(sentences)
            try:
                async for chunk in self.guarded(audio, voice):
                    yield chunk
            finally:
                await audio.aclose()

        return synthesize

    async def synthesizer(self, voice: str, speaker: str | None) -> Synthesizer:
        """Return what speaks ``voice``: the subentry's server, or embedded Piper."""
        if self.embedded:
            return await self._embedded(voice, speaker)
        info = await self._server_info()
        self.voices = info.voices
        self._check(voice, speaker)
        return WyomingTTS(self.host, self.port, voice=voice, speaker=speaker)

    async def guarded(
        self, audio: AsyncGenerator[AudioChunk], voice: str
    ) -> AsyncGenerator[AudioChunk]:
        """Pass ``voice``'s audio on; map speech errors to HA errors; close when done."""
        try:
            async for chunk in audio:
                yield chunk
        except SpeechVoiceNotFoundError as err:
            self._checked = None
            if voice == self.voice:
                raise self._voice_missing() from err
            raise unknown_voice_error(voice, self.voices, self.languages) from err
        except SpeechError as err:
            self._checked = None
            raise self.unreachable() from err
        finally:
            await audio.aclose()
        if voice == self.voice:
            async_clear_missing_voice(self._hass, self._subentry.subentry_id)

    def unreachable(self) -> HomeAssistantError:
        """Return the error for a server that cannot be reached."""
        return HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="tts_unreachable",
            translation_placeholders={"server": self.server},
        )

    async def _server_info(self) -> TtsInfo:
        """Return the server's voices: known within a minute, else asked (once at a time)."""
        if self._checked is not None and time.monotonic() - self._checked[0] < SERVER_CHECK_TTL:
            return self._checked[1]
        if self._checking is None:
            self._checking = asyncio.ensure_future(self._ask_server())
        checking = self._checking
        try:
            return await asyncio.shield(checking)
        finally:
            if checking.done() and self._checking is checking:
                self._checking = None

    async def _ask_server(self) -> TtsInfo:
        """Ask the server for its voices, or raise the unreachable error."""
        try:
            info = await WyomingTTS(self.host, self.port).describe()
        except SpeechError as err:
            raise self.unreachable() from err
        self._checked = (time.monotonic(), info)
        return info

    async def _embedded(self, voice: str, speaker: str | None) -> EmbeddedPiper:
        """Return embedded Piper with ``voice`` from the folder (loaded once), or raise."""
        assert self._folder is not None  # made for an embedded subentry
        try:
            await async_require_piper(self._hass)
            self.voices = tuple(file.voice for file in await self._folder.voices())
            self._check(voice, speaker)
            return EmbeddedPiper(await self._folder.load(voice), speaker)
        except SpeechEngineMissingError as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key="tts_piper_unavailable"
            ) from err
        except VoiceFileError as err:
            if voice == self.voice:
                async_report_bad_voice_file(
                    self._hass, self._entry_id, self._subentry.subentry_id, voice, str(err.path)
                )
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="tts_voice_file",
                translation_placeholders={"voice": voice, "path": str(err.path)},
            ) from err

    def _check(self, voice: str, speaker: str | None) -> None:
        """Raise unless ``voice`` (and ``speaker``) is on offer; our own voice gets an issue."""
        if voice == self.voice and all(v.name != voice for v in self.voices):
            if not self.embedded:
                self._checked = None
                raise self._voice_missing()
            return  # loading it says what is wrong with the file
        offered_voice(self.voices, voice, speaker, self.languages)

    def _voice_missing(self) -> HomeAssistantError:
        """Raise the repair issue for our voice and return the error to raise."""
        async_report_missing_voice(
            self._hass, self._entry_id, self._subentry.subentry_id, self.voice, self.server
        )
        return HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="tts_voice_missing",
            translation_placeholders={"voice": self.voice, "server": self.server},
        )


def supported_voices(voices: Iterable[TtsVoice], language: str) -> list[tts.Voice] | None:
    """Return HA's voices for ``language``, sorted by name, or None if there are none."""
    found = [
        tts.Voice(voice_id=voice.name, name=voice.description or voice.name)
        for voice in voices
        if language in voice.languages
    ]
    return sorted(found, key=lambda voice: voice.name) or None


def offered_voice(
    voices: tuple[TtsVoice, ...], name: str, speaker: str | None, languages: Iterable[str]
) -> TtsVoice:
    """Return the voice ``name`` if it is offered (with ``speaker``), or raise a clear error."""
    voice = next((v for v in voices if v.name == name), None)
    if voice is None:
        raise unknown_voice_error(name, voices, languages)
    if speaker is not None and speaker not in voice.speakers:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="tts_speaker_unknown",
            translation_placeholders={
                "voice": name,
                "speaker": clean_text(speaker, 100),
                "speakers": _names(voice.speakers),
            },
        )
    return voice


def unknown_voice_error(
    name: str, voices: Iterable[TtsVoice], languages: Iterable[str]
) -> ServiceValidationError:
    """Return the error for a voice not on offer, naming those in ``languages`` first."""
    wanted = set(languages)
    voices = sorted(voices, key=lambda voice: wanted.isdisjoint(voice.languages))
    return ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key="tts_voice_unknown",
        translation_placeholders={
            "voice": clean_text(name, 100),
            "voices": _names(voice.name for voice in voices),
        },
    )


def _names(names: Iterable[str]) -> str:
    """Return up to MAX_NAMED names, comma-separated ("-" for none, "…" for more)."""
    listed = list(names)
    text = ", ".join(listed[:MAX_NAMED]) or "-"
    return f"{text}, …" if len(listed) > MAX_NAMED else text


async def async_mp3_ready(hass: HomeAssistant) -> bool:
    """Install lameenc through HA if it is missing; say whether MP3 can be made here."""
    try:
        await async_process_requirements(hass, DOMAIN, [LAMEENC_REQUIREMENT])
    except RequirementsNotFound as err:
        LOGGER.info("No MP3 encoder (%s): HA converts the voices' WAV to MP3 itself", err)
        return False
    return await hass.async_add_executor_job(mp3_available)


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
