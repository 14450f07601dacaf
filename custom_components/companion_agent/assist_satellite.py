"""The companion's own Assist satellite for Wyoming satellites: one entity per satellite subentry.

The satellite wakes on its own wake word and sends ``run-pipeline``; the entity runs
Assist on the audio that follows (each run with state of its own: ``voice/satellite_run``)
and streams the answer to the satellite as PCM while Piper makes it. HA is asked for WAV
with no forced rate (``tts_options``), so its TTS converter (ffmpeg, which holds first audio
back by seconds) never runs; the satellite's speaker format, when it names one, is made in
process. The answer's first audio leaves HA in ``SatelliteSpeaker._send_audio``
(``engine/speech/satellite_speaker.py``), timed as ``first_audio_at``.

A new run (the wake word again) while the answer plays is a barge-in: the audio stops at
once, the playback watcher keeps only the sentences that could be heard in the seconds
that played, and the new run hears what was said over it. The satellite's ``played`` is
the end of playback when it sends one; else the audio's paced end. Announcements and
conversation starts play the same way (``voice/satellite_media``); timers are sent as the
satellite's timer events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import replace
from typing import Any

from homeassistant.components import intent, tts
from homeassistant.components.assist_pipeline import PipelineEvent
from homeassistant.components.assist_pipeline.pipeline import PipelineRunValidationError
from homeassistant.components.assist_satellite import (
    AssistSatelliteConfiguration,
    AssistSatelliteEntity,
    AssistSatelliteEntityFeature,
    AssistSatelliteWakeWord,
)
from homeassistant.components.assist_satellite.entity import AssistSatelliteAnnouncement
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_HOST, CONF_PORT, Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.device_registry import DeviceInfo
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from wyoming.error import Error
from wyoming.event import Event

from .const import CONF_AREA, DOMAIN, LOGGER, SUBENTRY_SATELLITE
from .engine.errors import AudioFormatError, CompanionError
from .engine.speech import SPEECH_MARKS, AudioProgress, SatelliteInfo
from .engine.speech.satellite import (
    Described,
    MicAudio,
    MicStopped,
    PcmFormat,
    Played,
    RunRequested,
    SatelliteInput,
    WakeDetected,
    unwrap_wav,
)
from .runtime import CompanionConfigEntry
from .voice.satellite_connection import SatelliteConnection
from .voice.satellite_media import announcement_audio
from .voice.satellite_run import CURRENT_RUN, SatelliteRun
from .voice.satellite_timers import timer_event
from .voice.satellite_voice import Playback, SatelliteVoice, async_heard

STREAMING_WINDOW = 1.0
"""A satellite whose audio came this recently while no run listened streams all the time."""


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one Assist satellite per satellite subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_SATELLITE:
            async_add_entities(
                [CompanionSatelliteEntity(hass, entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


def satellite_device(subentry: ConfigSubentry) -> DeviceInfo:
    """Return the device of a satellite subentry (its entity and selects share it)."""
    return DeviceInfo(
        identifiers={(DOMAIN, subentry.subentry_id)},
        name=subentry.title,
        model="Wyoming satellite",
        suggested_area=subentry.data.get(CONF_AREA),
    )


class CompanionSatelliteEntity(AssistSatelliteEntity):
    """A Wyoming satellite that speaks the answer as it is made and hears the person over it."""

    _attr_has_entity_name = True
    _attr_name = None
    _attr_available = False
    _attr_supported_features = (
        AssistSatelliteEntityFeature.ANNOUNCE | AssistSatelliteEntityFeature.START_CONVERSATION
    )

    @property
    def tts_options(self) -> dict[str, Any]:
        """Ask TTS for WAV with no rate, width or channels: Home Assistant converts nothing."""
        return {tts.ATTR_PREFERRED_FORMAT: "wav"}

    def __init__(
        self, hass: HomeAssistant, entry: CompanionConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Bind the entity to its satellite; connect once it is added."""
        self.entry = entry
        self.subentry = subentry
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = satellite_device(subentry)
        self._connection = SatelliteConnection(
            subentry.data[CONF_HOST], int(subentry.data[CONF_PORT]), self
        )
        self._voice = SatelliteVoice(hass, entry, self._connection.send)
        self._info: SatelliteInfo | None = None
        self._run: SatelliteRun | None = None
        self._runs = 0
        self._wake_word: str | None = None
        self._unheard_audio_at: float | None = None

    @property
    def pipeline_entity_id(self) -> str | None:
        """Return the satellite's *Assistant* select."""
        return self._select(f"{self.subentry.subentry_id}-pipeline")

    @property
    def vad_sensitivity_entity_id(self) -> str | None:
        """Return the satellite's *Finished speaking detection* select."""
        return self._select(f"{self.subentry.subentry_id}-vad_sensitivity")

    @property
    def first_audio_at(self) -> float | None:
        """Return when (``time.monotonic()``) the audio playing now first left for the satellite."""
        return self._voice.first_audio_at

    def _select(self, unique_id: str) -> str | None:
        """Return the entity id of one of the satellite's selects."""
        return er.async_get(self.hass).async_get_entity_id(Platform.SELECT, DOMAIN, unique_id)

    async def async_added_to_hass(self) -> None:
        """Connect to the satellite; take timers started on its device."""
        await super().async_added_to_hass()
        self._connection.start(self.hass, self.entry)
        if self.registry_entry is not None and (device_id := self.registry_entry.device_id):
            self.async_on_remove(
                intent.async_register_timer_handler(self.hass, device_id, self._on_timer)
            )

    async def async_will_remove_from_hass(self) -> None:
        """Stop what plays and runs; disconnect."""
        self._voice.stop()
        if self._run is not None:
            self._run.stop_listening()
        await self._connection.stop()
        await super().async_will_remove_from_hass()

    @callback
    def async_get_configuration(self) -> AssistSatelliteConfiguration:
        """Return the wake words the satellite says it has, and which listen."""
        info = self._info
        if info is None:
            return AssistSatelliteConfiguration([], [], 1)
        return AssistSatelliteConfiguration(
            available_wake_words=[
                AssistSatelliteWakeWord(
                    id=w.id, wake_word=w.phrase, trained_languages=list(w.languages)
                )
                for w in info.wake_words
            ],
            active_wake_words=list(info.active_wake_words),
            max_active_wake_words=info.max_active_wake_words or 1,
        )

    async def async_set_configuration(self, config: AssistSatelliteConfiguration) -> None:
        """Refuse other wake words: a Wyoming satellite is told its wake words on itself."""
        if self._info is None or config.active_wake_words != list(self._info.active_wake_words):
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key="satellite_wake_words"
            )

    def on_pipeline_event(self, event: PipelineEvent) -> None:
        """Hand a pipeline event to the run it belongs to (never to a newer one)."""
        run = CURRENT_RUN.get()
        if run is not None:
            run.on_pipeline_event(event)

    # The satellite's connection

    def satellite_connected(self) -> None:
        """Show the satellite available."""
        self._attr_available = True
        self.async_write_ha_state()

    def satellite_disconnected(self, reason: str) -> None:
        """Stop the answer (it did not get through) and the run; show it unavailable."""
        self._interrupt(failed=True)
        self._attr_available = False
        self.tts_response_finished()  # idle (and unavailable) until it is back

    def satellite_input(self, item: SatelliteInput) -> None:
        """Act on what the satellite said."""
        match item:
            case RunRequested() as request:
                self._start_run(request)
            case MicAudio(pcm=pcm):
                if self._run is not None and self._run.listening:
                    self._run.hear(pcm)
                else:
                    self._unheard_audio_at = self.hass.loop.time()
            case MicStopped():
                if self._run is not None:
                    self._run.stop_listening()
            case Played():
                self._voice.satellite_played()
            case WakeDetected(name=name):
                self._wake_word = name
            case Described(info=info) if info is not None:
                self._info = info

    # Runs, barge-in, the answer's audio

    def _start_run(self, request: RunRequested) -> None:
        """Start a pipeline run; what ran or played before is stopped (a barge-in)."""
        self._interrupt(failed=False)
        if request.speaker_format is not None:
            self._voice.speaker_format = request.speaker_format
        self._runs += 1
        run = SatelliteRun(request, self._runs, speak=self._speak, tell=self._tell)
        self._run = run
        name = request.wake_word_name or self._wake_word
        self._wake_word = None
        phrase = self._info.phrase(name) if self._info is not None else name
        run.task = self.entry.async_create_background_task(
            self.hass, self._async_run(run, phrase), f"{self.entity_id} run {run.number}"
        )

    async def _async_run(self, run: SatelliteRun, phrase: str | None) -> None:
        """Run Assist for ``run``; its pipeline events know it as ``CURRENT_RUN``."""
        CURRENT_RUN.set(run)
        SPEECH_MARKS.set(run.marks)  # the companion's voice marks where each sentence begins
        try:
            await self.async_accept_pipeline_from_satellite(
                run.audio(),
                start_stage=run.start_stage,
                end_stage=run.end_stage,
                wake_word_phrase=phrase,
            )
        except (HomeAssistantError, PipelineRunValidationError, CompanionError) as err:
            LOGGER.warning("%s: the pipeline could not run: %s", self.entity_id, err)
            self._tell(Error(text=str(err), code="pipeline-failed").event())
        finally:
            run.stop_listening()
            if not run.speaking:
                run.finished = True

    def _interrupt(self, *, failed: bool) -> None:
        """Stop the answer or announcement playing and the run listening; tell the turn."""
        stopped = self._voice.stop()
        run, self._run = self._run, None
        if run is None:
            if stopped is not None:
                self._cut(stopped, None, failed=failed)
            return
        run.stop_listening()
        if failed and run.task is not None:
            run.task.cancel()  # and with it its pipeline: nobody is there to hear it
        if not run.finished:
            run.finished = True
            self._cut(stopped, run, failed=failed)

    def _cut(
        self, stopped: AudioProgress | None, run: SatelliteRun | None, *, failed: bool
    ) -> None:
        """Tell the watched turn its audio stopped after what played (spoken over, or lost)."""
        progress = stopped or AudioProgress(played=0.0)
        if run is not None:
            progress = replace(progress, starts=tuple(run.marks.starts))
        self.entry.runtime_data.playback.async_cut(self.entity_id, progress, failed=failed)

    def _speak(self, run: SatelliteRun, token: str) -> bool:
        """Play ``run``'s answer from its TTS stream as it comes; say whether it started."""
        stream = tts.async_get_stream(self.hass, token)
        if stream is None or run is not self._run:
            return False

        async def open_audio() -> tuple[PcmFormat, AsyncIterator[bytes]]:
            """Open the answer's WAV stream."""
            if stream.extension != "wav":
                raise AudioFormatError(f"the TTS stream is {stream.extension}, not WAV")
            return await unwrap_wav(stream.async_stream_result())

        playback = self._voice.play(open_audio, f"run {run.number}")
        self.entry.async_create_background_task(
            self.hass, self._async_after_speech(run, playback), f"{self.entity_id} plays"
        )
        return True

    async def _async_after_speech(self, run: SatelliteRun, playback: Playback) -> None:
        """Once the answer was heard, show the satellite idle; a failed answer is cut."""
        try:
            heard = await async_heard(playback)
        except (HomeAssistantError, CompanionError) as err:
            LOGGER.warning("%s: the answer could not play: %s", self.entity_id, err)
            if run is self._run:
                self._run = None
                run.finished = True
                self._cut(playback.progress(), run, failed=True)
                self.tts_response_finished()
            return
        if heard and run is self._run:
            run.finished = True
            self.tts_response_finished()

    def _tell(self, event: Event) -> None:
        """Send a pipeline's event to the satellite, in the background."""
        if self._connection.connected:
            self._connection.send_soon(self.hass, event)

    # Announcements, conversation starts, timers

    async def async_announce(self, announcement: AssistSatelliteAnnouncement) -> None:
        """Play an announcement; return once the satellite has played it."""
        await self._async_play(announcement)

    async def async_start_conversation(
        self, start_announcement: AssistSatelliteAnnouncement
    ) -> None:
        """Play the start, then listen: at once if the satellite streams, else at its wake word.

        The next run, whenever the person wakes the satellite, continues the conversation.
        """
        await self._async_play(start_announcement)
        if (
            self._unheard_audio_at is not None
            and self.hass.loop.time() - self._unheard_audio_at < STREAMING_WINDOW
        ):
            self.hass.loop.call_soon(self._start_run, RunRequested(start="asr", end="tts"))

    async def _async_play(self, announcement: AssistSatelliteAnnouncement) -> None:
        """Play ``announcement`` to its end (or until the person speaks over it)."""
        if not self._connection.connected:
            raise HomeAssistantError(translation_domain=DOMAIN, translation_key="satellite_offline")
        self._interrupt(failed=False)
        source = announcement_audio(self.hass, announcement, self._voice.speaker_format)
        playback = self._voice.play(source, "an announcement")
        try:
            await async_heard(playback)
        except (HomeAssistantError, CompanionError) as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="satellite_announce",
                translation_placeholders={"error": str(err)},
            ) from err

    @callback
    def _on_timer(self, event_type: intent.TimerEventType, timer: intent.TimerInfo) -> None:
        """Send a timer of the satellite's device to the satellite."""
        if self._connection.connected:
            with suppress(ValueError):
                self._connection.send_soon(self.hass, timer_event(event_type, timer))
