"""``SatelliteRuns``: the pipeline runs of one satellite, their answers' audio, and barge-in.

A run starts when the satellite asks (``run-pipeline``) or a conversation start listens;
whatever ran or played before is stopped first, and the playback watcher is told how many
seconds of it were heard (``PlaybackWatcher.async_cut``), with the sentences' marks when
the companion's voice spoke. Each run's task sets ``CURRENT_RUN`` and ``SPEECH_MARKS``
before Assist starts (the pipeline's tasks inherit them). The answer plays from the run's
TTS stream as it comes (or from the turn's own audio, sooner, when the companion's voice
speaks it); once heard, the satellite is idle again. A run whose satellite
went away is cancelled with its pipeline: nobody is there to hear it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

from homeassistant.components import tts
from homeassistant.components.assist_pipeline.pipeline import PipelineRunValidationError
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from wyoming.error import Error
from wyoming.event import Event

from ..const import LOGGER
from ..engine.errors import AudioFormatError, CompanionError
from ..engine.speech import SPEECH_MARKS, AudioProgress
from ..engine.speech.satellite import PcmFormat, RunRequested, unwrap_wav
from .satellite_run import CURRENT_RUN, SatelliteRun
from .satellite_voice import AudioSource, Playback, SatelliteVoice, async_heard

type Accept = Callable[[SatelliteRun, str | None], Awaitable[None]]
"""Run Assist on a run's audio (the entity's ``async_accept_pipeline_from_satellite``)."""
type Cut = Callable[[AudioProgress, bool], None]
"""Tell the watched turn how far its audio got (and whether the satellite went away)."""


class SatelliteRuns:
    """The newest run of one satellite, and what plays of its answer."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry: ConfigEntry,
        voice: SatelliteVoice,
        *,
        accept: Accept,
        cut: Cut,
        idle: Callable[[], None],
        tell: Callable[[Event], None],
    ) -> None:
        """Run Assist through ``accept``; ``idle`` once an answer was heard."""
        self._hass = hass
        self._entry = entry
        self._voice = voice
        self._accept = accept
        self._cut = cut
        self._idle = idle
        self._tell = tell
        self._count = 0
        self.current: SatelliteRun | None = None

    def start(self, request: RunRequested, phrase: str | None, name: str) -> None:
        """Start a run; what ran or played before is stopped (a barge-in)."""
        self.interrupt(failed=False)
        if request.speaker_format is not None:
            self._voice.speaker_format = request.speaker_format
        self._count += 1
        run = SatelliteRun(request, self._count, speak=self._speak, tell=self._tell)
        self.current = run
        run.task = self._entry.async_create_background_task(
            self._hass, self._async_run(run, phrase), f"{name} run {run.number}"
        )

    def interrupt(self, *, failed: bool) -> None:
        """Stop what plays and the run; tell the turn how much of it was heard."""
        stopped = self._voice.stop()
        run, self.current = self.current, None
        if run is None:
            if stopped is not None:
                self._cut(stopped, failed)
            return
        run.stop_listening()
        if failed and run.task is not None:
            run.task.cancel()  # and with it its pipeline: nobody is there to hear it
        if not run.finished:
            run.finished = True
            self._cut_run(run, stopped, failed=failed)

    async def _async_run(self, run: SatelliteRun, phrase: str | None) -> None:
        """Run Assist for ``run``; its pipeline events know it as ``CURRENT_RUN``."""
        CURRENT_RUN.set(run)
        SPEECH_MARKS.set(run.marks)  # the companion's voice marks where each sentence begins
        try:
            await self._accept(run, phrase)
        except (HomeAssistantError, PipelineRunValidationError, CompanionError) as err:
            LOGGER.warning("Satellite run %d could not run: %s", run.number, err)
            self._tell(Error(text=str(err), code="pipeline-failed").event())
        finally:
            run.stop_listening()
            if not run.speaking:
                run.finished = True

    def _cut_run(self, run: SatelliteRun, stopped: AudioProgress | None, *, failed: bool) -> None:
        """Tell the turn of ``run`` how far its answer got, with its sentences' marks."""
        progress = stopped or AudioProgress(played=0.0)
        self._cut(replace(progress, starts=tuple(run.marks.starts)), failed)

    def _speak(self, run: SatelliteRun, source: str | AudioSource) -> bool:
        """Play ``run``'s answer (its TTS stream, or its own audio); say whether it started."""
        if run is not self.current:
            return False
        audio = self._stream_audio(source) if isinstance(source, str) else source
        if audio is None:
            return False
        playback = self._voice.play(audio, f"run {run.number}")
        self._entry.async_create_background_task(
            self._hass, self._async_after_speech(run, playback), f"satellite run {run.number}"
        )
        return True

    def _stream_audio(self, token: str) -> AudioSource | None:
        """Return the audio of HA's TTS stream ``token`` (None: there is no such stream)."""
        stream = tts.async_get_stream(self._hass, token)
        if stream is None:
            return None

        async def open_audio() -> tuple[PcmFormat, AsyncIterator[bytes]]:
            """Open the answer's WAV stream."""
            if stream.extension != "wav":
                raise AudioFormatError(f"the TTS stream is {stream.extension}, not WAV")
            return await unwrap_wav(stream.async_stream_result())

        return open_audio

    async def _async_after_speech(self, run: SatelliteRun, playback: Playback) -> None:
        """Once the answer was heard, the satellite is idle; an answer that failed is cut."""
        try:
            heard = await async_heard(playback)
        except (HomeAssistantError, CompanionError) as err:
            LOGGER.warning("Satellite run %d: the answer could not play: %s", run.number, err)
            if run is self.current:
                self.current = None
                run.finished = True
                self._cut_run(run, playback.progress(), failed=True)
                self._idle()
            return
        if heard and run is self.current:
            run.finished = True
            self._idle()
