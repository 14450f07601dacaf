"""``SatelliteRuns``: the pipeline runs of one satellite, their answers' audio, and barge-in.

A run starts when the satellite asks (``run-pipeline``) or a conversation start listens;
whatever ran or played before is stopped first, and the playback watcher is told how many
seconds of it were heard (``PlaybackWatcher.async_cut``), with the sentences' marks when
the companion's voice spoke. Each run's task marks itself as the run's before Assist
starts (``speaking_run``: the pipeline's tasks inherit it), so each pipeline event goes to
its own run and the companion's voice notes the run's marks; while its intent stage runs,
the run waits for its conversation's answer in the entry's ``SpeakingTurns``. The answer
plays from the run's TTS stream as it comes (or from the turn's own audio, sooner, when the
companion's voice speaks it); once heard, the satellite is idle again. A run whose satellite
went away is cancelled with its pipeline: nobody is there to hear it.

Follow-ups: once a run whose reply asks (its result's ``continue_conversation``) has ended
and its answer has been heard, a new run listens for the person's answer from speech to
text, without a wake word, in the same conversation (HA's satellite entity keeps its
conversation id, and its pipeline sends the answer to the agent that asked). It needs a
microphone that streams now: one that streams all the time, or one that woke itself and
was held (``SatelliteRun.holding``; the follow-up takes the stream over and holds it in
turn). The answer's own audio never reaches it: it starts after the audio was heard, and
microphone audio while no run listens is dropped. A satellite that streams only once its
voice activity detector hears speech (it asks for runs from ``wake``) is not streaming by
then: its next request within ``FOLLOW_UP_WINDOW`` runs from speech to text instead. A
barge-in, an announcement or a lost satellite in between ends it (nothing listens); a
follow-up that hears nothing ends as any run (HA's voice activity timeout, then its
error) and asks nothing, so the chain ends; at most ``MAX_FOLLOW_UPS`` in a row.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import Context
from dataclasses import replace

from homeassistant.components import tts
from homeassistant.components.assist_pipeline import PipelineEvent, PipelineEventType
from homeassistant.components.assist_pipeline.pipeline import (
    PipelineRunValidationError,
    PipelineStage,
)
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from wyoming.error import Error
from wyoming.event import Event

from ...const import LOGGER
from ...engine.errors import AudioFormatError, CompanionError
from ...engine.speech import AudioProgress
from ...engine.speech.satellite import PcmFormat, RunRequested, unwrap_wav
from ..speaking import SpeakingTurns, speaking, speaking_run
from .run import MayAskBack, SatelliteRun
from .voice import AudioSource, Playback, SatelliteVoice, async_heard

type Accept = Callable[[SatelliteRun, str | None], Awaitable[None]]
"""Run Assist on a run's audio (the entity's ``async_accept_pipeline_from_satellite``)."""
type Cut = Callable[[AudioProgress, bool], None]
"""Tell the watched turn how far its audio got (and whether the satellite went away)."""

MAX_FOLLOW_UPS = 10
"""Runs in a row without a wake word, each the answer to a reply that asked."""
FOLLOW_UP_WINDOW = 15.0
"""How long a satellite that streams on speech may take to ask for the answer's run: HA's
own voice command timeout (``VoiceCommandSegmenter.timeout_seconds``, 2026.2.3)."""


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
        streams: Callable[[], bool],
        may_ask_back: MayAskBack,
        speaking_turns: SpeakingTurns,
    ) -> None:
        """Run Assist through ``accept``; ``idle`` once an answer was heard.

        ``streams``: say whether the satellite's microphone streams now; ``speaking_turns``:
        where a run waits for its conversation's answer.
        """
        self._hass = hass
        self._entry = entry
        self._speaking = speaking_turns
        self._voice = voice
        self._accept = accept
        self._cut = cut
        self._idle = idle
        self._tell = tell
        self._streams = streams
        self._may_ask_back = may_ask_back
        self._count = 0
        self._name = "satellite"
        self._wakes_remotely = False
        """The satellite asks for runs from ``wake``: it streams on speech, or all the time."""
        self._awaited: tuple[float, int] | None = None
        """Until when such a satellite is awaited with an answer, and the follow-ups so far."""
        self.current: SatelliteRun | None = None

    def start(self, request: RunRequested, phrase: str | None, name: str) -> None:
        """Start the run the satellite asked for; what ran or played before is stopped.

        A satellite that asks from ``asr`` woke itself: it streams until told (the run
        holds it). One awaited for an answer is heard from ``asr``, with no wake word.
        """
        self._wakes_remotely = request.start == "wake"
        follow_ups = 0
        awaited = self._awaited
        if self._wakes_remotely and awaited and self._hass.loop.time() < awaited[0]:
            request, phrase, follow_ups = replace(request, start="asr"), None, awaited[1]
        holding = request.start == "asr" and not self._wakes_remotely
        self._begin(request, phrase, name, holding=holding, follow_ups=follow_ups, asked=True)

    def listen(self, name: str) -> None:
        """Start a run on the microphone's stream now, without a wake word."""
        self._begin(RunRequested(start="asr", end="tts"), None, name)

    def _begin(
        self,
        request: RunRequested,
        phrase: str | None,
        name: str,
        *,
        holding: bool = False,
        follow_ups: int = 0,
        asked: bool = False,
    ) -> None:
        """Start a run (``asked``: by the satellite); what ran or played before is stopped."""
        self.interrupt(failed=False, moved_on=asked)
        if request.speaker_format is not None:
            self._voice.speaker_format = request.speaker_format
        self._count += 1
        self._name = name
        run = SatelliteRun(
            request,
            self._count,
            speak=self._speak,
            tell=self._tell,
            may_ask_back=self._may_ask_back,
            holding=holding,
            follow_ups=follow_ups,
        )
        self.current = run
        run.task = self._entry.async_create_background_task(
            self._hass, self._async_run(run, phrase), f"{name} run {run.number}"
        )

    def interrupt(self, *, failed: bool, moved_on: bool = False) -> None:
        """Stop what plays and the run; tell the turn how much of it was heard.

        A satellite that streams for the run is told to stop, unless it has moved on by
        itself (``moved_on``: it asked for a new run) or is gone (``failed``).
        """
        self._awaited = None
        stopped = self._voice.stop()
        run, self.current = self.current, None
        if run is None:
            if stopped is not None:
                self._cut(stopped, failed)
            return
        run.stop_listening()
        if moved_on or failed:
            run.hand_over()
        else:
            run.release()
        if failed and run.task is not None:
            run.task.cancel()  # and with it its pipeline: nobody is there to hear it
        if not run.finished:
            run.finished = True
            self._cut_run(run, stopped, failed=failed)

    def on_pipeline_event(self, event: PipelineEvent) -> None:
        """Hand a pipeline event to the run it belongs to (never to a newer one).

        Its intent stage's start names the conversation whose answer it waits for; the
        stage's end (or the run's) ends the wait.
        """
        run = speaking().run
        if run is None:
            return
        match event.type:
            case PipelineEventType.INTENT_START:
                conversation_id = (event.data or {}).get("conversation_id")
                if isinstance(conversation_id, str):
                    self._speaking.wait(conversation_id, run)
            case PipelineEventType.INTENT_END | PipelineEventType.RUN_END:
                self._speaking.done(run)
        run.on_pipeline_event(event)

    async def _async_run(self, run: SatelliteRun, phrase: str | None) -> None:
        """Run Assist for ``run``; the tasks it starts (its pipeline's) know it as theirs."""
        with speaking_run(run):  # its events, and where the companion's voice marks sentences
            try:
                await self._accept(run, phrase)
            except (HomeAssistantError, PipelineRunValidationError, CompanionError) as err:
                LOGGER.warning("Satellite run %d could not run: %s", run.number, err)
                self._tell(Error(text=str(err), code="pipeline-failed").event())
            finally:
                self._speaking.done(run)
                run.ended = True
                run.stop_listening()
                if not run.speaking:
                    run.finished = True
                if not run.asks:
                    run.release()
                self._follow_up(run)

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
                run.release()
                self._cut_run(run, playback.progress(), failed=True)
                self._idle()
            return
        if heard and run is self.current:
            run.finished = True
            run.heard = True
            self._idle()
            self._follow_up(run)

    def _follow_up(self, run: SatelliteRun) -> None:
        """Listen for the answer, once ``run`` asked, has ended and its answer was heard."""
        if run is not self.current or not run.asks or not run.ended:
            return
        if run.end_stage == PipelineStage.TTS and not run.heard:
            if not run.speaking:  # its answer never played: nobody heard the question
                run.release()
            return  # else its answer still plays: after it
        if run.follow_ups >= MAX_FOLLOW_UPS:
            LOGGER.debug("Satellite run %d: %d follow-ups in a row", run.number, run.follow_ups)
            run.release()
            return
        if not self._streams():
            run.release()
            if self._wakes_remotely:
                self._awaited = (self._hass.loop.time() + FOLLOW_UP_WINDOW, run.follow_ups + 1)
            return
        LOGGER.debug("Satellite run %d asked: listening for the answer", run.number)
        # This runs in a task of the asking turn (its answer's playback, or its run), whose
        # context holds HA's ChatLog of the conversation: a run started in it would find that
        # ChatLog and fail. It starts in a context of its own, as the satellite's runs do.
        Context().run(
            self._begin,
            RunRequested(start="asr", end=run.request.end),
            None,
            self._name,
            holding=run.hand_over(),
            follow_ups=run.follow_ups + 1,
        )
