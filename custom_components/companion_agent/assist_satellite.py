"""The companion's own Assist satellite for Wyoming satellites: one entity per satellite subentry.

The satellite wakes on its own wake word and sends ``run-pipeline``; the entity runs
Assist on the audio that follows (each run with state of its own: ``voice/satellite/run``,
``voice/satellite/runs``) and streams the answer to the satellite as PCM while Piper makes
it. HA is asked for WAV with no forced rate (``tts_options``), so its TTS converter
(ffmpeg, which holds first audio back by seconds) never runs; the speaker format the
satellite names is made in process. The answer's first audio leaves HA in
``SatelliteSpeaker._send_audio`` (``engine/speech/satellite/speaker.py``); the entity's
``first_audio_at`` says when.

A new run (the wake word again) while the answer plays is a barge-in: the audio stops at
once, the playback watcher keeps only the sentences that began in the seconds played, and
the new run hears what was said over it. The satellite's ``played`` ends playback when it
sends one; else the audio's paced end does. Announcements and conversation starts play
the same way (``voice/satellite/media``). Timers started on the satellite's device go to it
as its own timer events (``timer_event``): a satellite that knows timers (wyoming-satellite
1.3 and later) shows them and rings when one finishes.

A reply that asks (the result's ``continue_conversation``) is answered without the wake
word: once it has been heard, a new run listens (``voice/satellite/runs``). A satellite
that woke on its own wake word would stop streaming at its ``transcript``, so that is held
back until the reply is known not to ask (``engine/speech/satellite/mirror.py``).
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from homeassistant.components import intent, tts
from homeassistant.components.assist_pipeline import PipelineEvent
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
from wyoming.event import Event
from wyoming.timer import TimerCancelled, TimerFinished, TimerStarted, TimerUpdated

from .const import CONF_AREA, DOMAIN, SUBENTRY_SATELLITE
from .conversation import async_may_ask_back
from .engine.errors import CompanionError
from .engine.speech import AudioProgress, SatelliteInfo
from .engine.speech.satellite import (
    Described,
    MicAudio,
    MicStopped,
    Played,
    RunRequested,
    SatelliteInput,
    WakeDetected,
)
from .runtime import CompanionConfigEntry, add_per_subentry
from .voice.satellite.connection import SatelliteConnection
from .voice.satellite.media import announcement_audio
from .voice.satellite.run import SatelliteRun
from .voice.satellite.runs import SatelliteRuns
from .voice.satellite.voice import SatelliteVoice, async_heard

STREAMING_WINDOW = 1.0
"""A satellite whose audio came this recently while no run listened streams all the time."""


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one Assist satellite per satellite subentry."""
    add_per_subentry(
        entry,
        SUBENTRY_SATELLITE,
        lambda entry, subentry: CompanionSatelliteEntity(hass, entry, subentry),
        async_add_entities,
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
        self._runs = SatelliteRuns(
            hass,
            entry,
            self._voice,
            accept=self._async_accept,
            cut=self._cut,
            idle=self.tts_response_finished,
            tell=self._tell,
            streams=self._streams,
            may_ask_back=lambda agent_id: async_may_ask_back(hass, agent_id),
            speaking_turns=entry.runtime_data.speaking,
        )
        self._info: SatelliteInfo | None = None
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
        """Stop what plays and runs (nobody is left to hear it); disconnect."""
        self._runs.interrupt(failed=True)
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
        self._runs.on_pipeline_event(event)

    # The satellite's connection

    def satellite_connected(self) -> None:
        """Show the satellite available."""
        self._attr_available = True
        self.async_write_ha_state()

    def satellite_disconnected(self, reason: str) -> None:
        """Stop the answer (it did not get through) and the run; show it unavailable."""
        self._runs.interrupt(failed=True)
        self._attr_available = False
        self.tts_response_finished()  # idle (and unavailable) until it is back

    def satellite_input(self, item: SatelliteInput) -> None:
        """Act on what the satellite said."""
        match item:
            case RunRequested() as request:
                self._start_run(request)
            case MicAudio(pcm=pcm):
                if (run := self._runs.current) is not None and run.listening:
                    run.hear(pcm)
                else:
                    self._unheard_audio_at = self.hass.loop.time()
            case MicStopped():
                if (run := self._runs.current) is not None:
                    run.stop_listening()
            case Played():
                self._voice.satellite_played()
            case WakeDetected(name=name):
                self._wake_word = name
            case Described(info=info) if info is not None:
                self._info = info

    def _start_run(self, request: RunRequested) -> None:
        """Start a pipeline run on the audio that follows (a barge-in if one runs)."""
        name = request.wake_word_name or self._wake_word
        self._wake_word = None
        phrase = self._info.phrase(name) if self._info is not None else name
        self._runs.start(request, phrase, self.entity_id)

    async def _async_accept(self, run: SatelliteRun, phrase: str | None) -> None:
        """Run Assist on ``run``'s audio, from and to the stages it asked for."""
        await self.async_accept_pipeline_from_satellite(
            run.audio(),
            start_stage=run.start_stage,
            end_stage=run.end_stage,
            wake_word_phrase=phrase,
        )

    def _cut(self, progress: AudioProgress, failed: bool) -> None:
        """Tell the watched turn how far its audio got (spoken over, or the satellite lost)."""
        self.entry.runtime_data.playback.async_cut(self.entity_id, progress, failed=failed)

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
        if self._streams():
            self.hass.loop.call_soon(self._runs.listen, self.entity_id)

    def _streams(self) -> bool:
        """Say whether the microphone streams now: its audio came lately while no run listened."""
        return (
            self._unheard_audio_at is not None
            and self.hass.loop.time() - self._unheard_audio_at < STREAMING_WINDOW
        )

    async def _async_play(self, announcement: AssistSatelliteAnnouncement) -> None:
        """Play ``announcement`` to its end (or until the person speaks over it)."""
        if not self._connection.connected:
            raise HomeAssistantError(translation_domain=DOMAIN, translation_key="satellite_offline")
        self._runs.interrupt(failed=False)
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


def timer_event(event_type: intent.TimerEventType, timer: intent.TimerInfo) -> Event:
    """Return the Wyoming event for one timer event; raise ValueError for an unknown kind."""
    match event_type:
        case intent.TimerEventType.STARTED:
            return TimerStarted(
                id=timer.id,
                total_seconds=timer.seconds,
                name=timer.name,
                start_hours=timer.start_hours,
                start_minutes=timer.start_minutes,
                start_seconds=timer.start_seconds,
            ).event()
        case intent.TimerEventType.UPDATED:
            return TimerUpdated(
                id=timer.id, is_active=timer.is_active, total_seconds=timer.seconds
            ).event()
        case intent.TimerEventType.CANCELLED:
            return TimerCancelled(id=timer.id).event()
        case intent.TimerEventType.FINISHED:
            return TimerFinished(id=timer.id).event()
    raise ValueError(f"unknown timer event {event_type!r}")
