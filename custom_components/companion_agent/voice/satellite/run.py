"""``SatelliteRun``: one Assist pipeline run a satellite asked for, with state of its own.

HA's own Wyoming satellite (2026.2.3) keeps one "running" flag for all runs: the end of a
run it cancelled clears the flag the run replacing it had just set, and the new run's
audio is dropped, so what the person said over an answer never reaches speech to text.
Here each run has its own audio queue, its own TTS stream and its own end, and a pipeline
event goes to the run it belongs to (``SatelliteRuns.on_pipeline_event``: the run's task
marks the tasks HA starts from it, ``voice/speaking.py``). A cancelled run's end ends that
run only.

A run hears microphone audio while it listens: until speech to text ends (or the run
does), at most ``MAX_LISTEN_SECONDS`` of it, with at most ``MAX_QUEUED_CHUNKS`` waiting.
It keeps what it heard after the wake word (``voice``): when the pipeline's speech
to text is not the companion's, the agent matches the speaker's voice from it.

A run of a satellite that woke itself holds the satellite's stream (``holding``): its
``transcript`` is not sent at the end of speech to text, so the satellite goes on
streaming while the reply is made (``mirror.py`` says why). The run lets it go
(``release``) as soon as the reply is known not to ask: at the start of intent recognition
when the agent never asks back (HA's own, or a persona with follow-ups off: the
``transcript`` goes then, as before), at the intent's end (``continue_conversation``
false), at the run's end. A reply that asks keeps it for the follow-up run
(``hand_over``, ``voice/satellite/runs``).

Its answer plays from HA's TTS stream once HA opens it, or sooner: when the companion's
own voice speaks the turn (the pipeline's voice is ours), the agent finds the run waiting
for its conversation's answer (``SpeakingTurns``) and hands it the turn's audio as it
starts (``speak_ahead``), and the satellite hears the first sentence
while HA still waits for 60 characters of reply before it opens its stream (HA's
``STREAM_RESPONSE_CHARS`` in ``assist_pipeline``, as ``compat.stream_response_chars`` reads it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from homeassistant.components.assist_pipeline import PipelineEvent, PipelineEventType
from homeassistant.components.assist_pipeline.pipeline import PipelineStage
from wyoming.event import Event

from ...const import LOGGER
from ...engine.speech import SentenceMarks
from ...engine.speech.satellite import (
    MIC_FORMAT,
    RunRequested,
    Stage,
    mirror_pipeline_event,
    release_event,
)
from ..voiceprints import HeardAudio
from .voice import AudioSource

MAX_QUEUED_CHUNKS = 400
MAX_LISTEN_SECONDS = 30.0
PIPELINE_STAGES: dict[Stage, PipelineStage] = {
    "wake": PipelineStage.WAKE_WORD,
    "asr": PipelineStage.STT,
    "intent": PipelineStage.INTENT,
    "handle": PipelineStage.INTENT,
    "tts": PipelineStage.TTS,
}

type Speak = Callable[[SatelliteRun, str | AudioSource], bool]
"""Start playing a run's answer (HA's TTS stream with this token, or the turn's own audio);
say whether it started."""
type Tell = Callable[[Event], None]
type MayAskBack = Callable[[str], bool]
"""Say whether the conversation agent with this id may end a reply waiting for an answer."""


class SatelliteRun:
    """A pipeline run of one satellite: its audio in, its events out, its answer's audio."""

    def __init__(
        self,
        request: RunRequested,
        number: int,
        *,
        speak: Speak,
        tell: Tell,
        may_ask_back: MayAskBack,
        holding: bool = False,
        follow_ups: int = 0,
    ) -> None:
        """Start listening for the run ``request`` asked for (``number``: the satellite's nth).

        ``holding``: the satellite streams for this run until it is told to stop;
        ``follow_ups``: how many runs in a row, each the answer to a reply that asked, this
        one is the last of.
        """
        self.request = request
        self.number = number
        self.start_stage = PIPELINE_STAGES[request.start]
        self.end_stage = PIPELINE_STAGES[request.end]
        self.follow_ups = follow_ups
        self.holding = holding
        """The satellite streams for this run until told: its ``transcript`` waits."""
        self.asks = False
        """Its reply waits for the person's answer (the result's ``continue_conversation``)."""
        self.heard = False
        """Its answer has been heard to the end."""
        self._speak = speak
        self._tell = tell
        self._may_ask_back = may_ask_back
        self._transcript: Event | None = None
        self._audio: asyncio.Queue[bytes | None] = asyncio.Queue(MAX_QUEUED_CHUNKS)
        self._heard = 0.0
        self._dropped = 0
        self._tts_token: str | None = None
        self.voice = HeardAudio()
        """What the person said from speech to text's start (for who said it), bounded."""
        self.marks = SentenceMarks()
        """Where each sentence of its answer begins, when the companion's voice speaks it."""
        self.listening = True
        self.speaking = False
        """Its answer's audio has started (or was asked to)."""
        self.ended = False
        """Home Assistant's pipeline run has ended (its answer may still be playing)."""
        self.finished = False
        """Nothing of it is left: ended, and its answer (if any) was heard or stopped."""
        self.task: asyncio.Task[None] | None = None
        """The task that runs it (and awaits its pipeline)."""

    def hear(self, pcm: bytes) -> None:
        """Take microphone audio (16 kHz, 16-bit mono) while the run listens."""
        if not self.listening:
            return
        self._heard += MIC_FORMAT.seconds(len(pcm))
        if self._heard > MAX_LISTEN_SECONDS:
            LOGGER.debug("Satellite run %d: over %.0f s of audio", self.number, self._heard)
            self.stop_listening()
            return
        self.voice.add(pcm)
        try:
            self._audio.put_nowait(pcm)
        except asyncio.QueueFull:
            if not self._dropped:  # speech to text is not reading: it has what it needs
                LOGGER.debug("Satellite run %d: audio dropped, nobody reads it", self.number)
            self._dropped += 1

    def stop_listening(self) -> None:
        """End the run's audio: speech to text gets what it has."""
        if not self.listening:
            return
        self.listening = False
        while self._audio.full():
            self._audio.get_nowait()
        self._audio.put_nowait(None)

    async def audio(self) -> AsyncIterator[bytes]:
        """Yield the run's microphone audio until it stops listening."""
        while (chunk := await self._audio.get()) is not None:
            yield chunk

    def on_pipeline_event(self, event: PipelineEvent) -> None:
        """Follow one of this run's pipeline events; tell the satellite what it needs to know."""
        data = event.data or {}
        mirrored = mirror_pipeline_event(str(event.type), data)
        match event.type:
            case PipelineEventType.RUN_START:
                output = data.get("tts_output")
                if isinstance(output, dict) and isinstance(output.get("token"), str):
                    self._tts_token = output["token"]
            case PipelineEventType.WAKE_WORD_END:
                self.voice = HeardAudio()  # what came before was the wake word's
            case PipelineEventType.STT_END:
                self.stop_listening()
                if self.holding:  # it would stop streaming: told once the reply is known
                    self._transcript, mirrored = mirrored, None
            case PipelineEventType.INTENT_START if self.holding:
                agent = data.get("engine")
                if not isinstance(agent, str) or not self._may_ask_back(agent):
                    self.release()
            case PipelineEventType.INTENT_PROGRESS if data.get("tts_start_streaming"):
                self._start_speaking()
            case PipelineEventType.INTENT_END:
                output = data.get("intent_output")
                self.asks = isinstance(output, dict) and output.get("continue_conversation") is True
                if not self.asks:
                    self.release()
            case PipelineEventType.TTS_END:
                self._start_speaking()
            case PipelineEventType.RUN_END:
                self.ended = True
                self.stop_listening()
                if not self.speaking:
                    self.finished = True
                if not self.asks:
                    self.release()
        if mirrored is not None:
            self._tell(mirrored)

    def release(self) -> None:
        """Let the satellite stop streaming for this run: tell it, once, if it still streams."""
        if self.holding:
            self.holding = False
            self._tell(release_event(self._transcript, answering=self.speaking))

    def hand_over(self) -> bool:
        """Give up the satellite's stream untold (a new run hears it); say if it was held."""
        holding, self.holding = self.holding, False
        return holding

    def speak_ahead(self, audio: AudioSource) -> None:
        """Play the answer from the turn's own audio now, before HA's TTS stream opens."""
        if not self.speaking and not self.ended and self.end_stage == PipelineStage.TTS:
            self.speaking = self._speak(self, audio)

    def _start_speaking(self) -> None:
        """Start playing the run's answer from its TTS stream, once."""
        if self.speaking or self._tts_token is None:
            return
        self.speaking = self._speak(self, self._tts_token)
