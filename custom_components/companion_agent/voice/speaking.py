"""Speech identity: the voice a turn's pipeline speaks with, and the turn and run a stage serves.

What Home Assistant hands each stage of a spoken turn, and how each finds its speech:

- The conversation agent gets the ``ConversationInput`` (conversation id, satellite, device,
  context) and the ``ChatLog``; neither names a pipeline. A satellite's pipeline is the one
  its *Assistant* select names (the entity's public ``pipeline_entity_id``; its state is a
  pipeline's name, or *preferred*), and a pipeline's voice is its TTS engine, language and
  voice (``satellite_voice``, ``pipeline_voice``: public APIs). A run without a satellite
  (the browser's Assist dialog, the websocket API) is named by nothing HA hands over: it is
  found in Assist's table of running pipelines by the turn's context (``running_voice``,
  through ``compat.async_pipeline_runs``, the one place that reads it, guarded: missing or
  of another shape, the voice starts only when HA's stream opens, and a warning and a
  repair issue say so once).
- The companion's own satellite sees its run's pipeline events; ``INTENT_START`` names the
  conversation whose answer the run waits for. ``SpeakingTurns``, the registry (one per
  entry, in its runtime), holds each such run by that conversation id until the intent
  stage ends; the agent looks its conversation up there and hands the run the turn's audio
  at once (``SatelliteRun.speak_ahead``), before HA opens its TTS stream.
- A TTS stream is handed ``TTSAudioRequest`` (language, options, the text) and our
  satellite's entity a ``PipelineEvent`` (its type and data): no conversation, no run, no
  context. The one adapter for these two is ``Speaking``, a single ContextVar: HA makes
  both in tasks it creates from the task that started them (Assist's pipeline from the
  satellite run's task; the TTS audio from the ChatLog's delta listener, in the agent's
  task), and an asyncio task starts with a copy of its creator's context. So our
  satellite's run sets its run in its own task before Assist starts (``speaking_run``: its
  events find it, and our voice notes where each sentence begins in its ``marks``); the
  agent sets its turn's trace id while it writes into the ChatLog, ``start_chat`` while it
  sets its stream's message (``speaking_turn``). A stream without a turn there finds it by
  the text HA hands it first (``SpeechTurns.writing``, ``.spoken``), else speaks that text
  as any other. No HA internals are read for it.

Who spoke is the third thing no handle carries: speech to text is handed the audio and its
format only, the agent the text. Assist awaits its speech to text and then its intent stage
in the run's one task, so our speech to text notes the voice it matched in ``Speaking``
(``heard_voice``) and the agent reads it there (``async_turn_speaker``).

``assist_pipeline`` is imported only once it is set up: its audio requirements may be missing
where Assist is not in use.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from homeassistant.components import tts
from homeassistant.components.assist_satellite import AssistSatelliteEntity
from homeassistant.const import Platform
from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.helpers import entity_registry as er

from ..compat import async_get_entity, async_pipeline_runs
from ..const import LOGGER
from ..engine.speech import SentenceMarks
from ..engine.voices import Speaker
from .satellite.run import SatelliteRun
from .voiceprints import HeardVoice, HouseholdVoices

ASSIST_PIPELINE = "assist_pipeline"
PREFERRED = "preferred"
MAX_WAITING = 64
"""Runs of our satellites waiting for an answer that are kept (one per satellite at a time)."""
HEARD_FOR = 60.0
"""Seconds the voice our speech to text matched stays its utterance's, for the agent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineVoice:
    """A pipeline's TTS: the engine (an entity id), its language and its options."""

    engine: str
    language: str | None
    options: dict[str, str]


class SpeakingTurns:
    """The runs of our own satellites that wait for a conversation's answer, by conversation id."""

    def __init__(self) -> None:
        """Hold no run yet."""
        self._waiting: OrderedDict[str, SatelliteRun] = OrderedDict()

    def wait(self, conversation_id: str, run: SatelliteRun) -> None:
        """Note that ``run`` waits for the answer in ``conversation_id`` (its intent began)."""
        self._waiting.pop(conversation_id, None)
        self._waiting[conversation_id] = run
        while len(self._waiting) > MAX_WAITING:
            self._waiting.popitem(last=False)

    def done(self, run: SatelliteRun) -> None:
        """Forget ``run``: its intent stage, or the run, has ended."""
        for conversation_id in [c for c, waiting in self._waiting.items() if waiting is run]:
            del self._waiting[conversation_id]

    def run(self, conversation_id: str) -> SatelliteRun | None:
        """Return the run of ours that waits for the answer in ``conversation_id``, if any."""
        return self._waiting.get(conversation_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Speaking:
    """What the tasks HA makes for a run or a turn inherit of its speech (the one adapter)."""

    run: SatelliteRun | None = None
    """The companion's satellite's run whose pipeline this is; set in the run's own task."""
    trace_id: str | None = None
    """The turn our agent speaks; set while it writes into the ChatLog or a stream's message."""
    heard: HeardVoice | None = None
    """Who spoke the utterance this run transcribed; set by our speech to text when it ends."""

    @property
    def marks(self) -> SentenceMarks | None:
        """Return where a stream made here notes each sentence's start (our satellite asks)."""
        return self.run.marks if self.run is not None else None


NOTHING = Speaking()
"""What a task outside any run or turn knows: nothing."""
_SPEAKING: ContextVar[Speaking | None] = ContextVar("companion_speaking", default=None)


def speaking() -> Speaking:
    """Return what the current task knows of the speech it serves (``NOTHING``, by default)."""
    return _SPEAKING.get() or NOTHING


@contextmanager
def speaking_run(run: SatelliteRun) -> Iterator[None]:
    """Mark the current task, and the tasks it creates meanwhile (Assist's), as ``run``'s."""
    token = _SPEAKING.set(replace(speaking(), run=run))
    try:
        yield
    finally:
        _SPEAKING.reset(token)


def heard_voice(heard: HeardVoice) -> None:
    """Note who spoke the utterance of the current run, for its conversation stage to read.

    Our speech to text calls it at its end, in the coroutine Assist's run awaits: the run's
    intent stage, awaited next in the same task, sees it; other runs never do.
    """
    _SPEAKING.set(replace(speaking(), heard=heard))


def take_heard(text: str) -> HeardVoice | None:
    """Return, once, who spoke ``text`` as this run's speech to text noted it; else None.

    The note is cleared as it is read, and counts only for the words it came with, heard
    within ``HEARD_FOR`` seconds: a later turn in the same task (a text turn after a spoken
    one, when a caller runs several pipelines in one task) never inherits a voice.
    """
    current = speaking()
    heard = current.heard
    if heard is None:
        return None
    _SPEAKING.set(replace(current, heard=None))
    fresh = time.monotonic() - heard.at <= HEARD_FOR
    return heard if fresh and heard.text == text.strip() else None


async def async_turn_speaker(
    hass: HomeAssistant, voices: HouseholdVoices, user_id: str | None, text: str
) -> Speaker | None:
    """Return who speaks the current turn (``text``): signed in, heard, or None.

    A signed-in user (the turn's context names them) speaks as themself, and may approve
    unless their voice was enrolled as a child's. Else the voice this run's speech to text
    matched for these words (``take_heard``); else, on our satellite whose pipeline
    transcribes elsewhere, the voice its run kept; else nothing says who (a text turn
    without a user).
    """
    heard = take_heard(text)
    if user_id is not None:
        user = await hass.auth.async_get_user(user_id)
        role = voices.role_of(user_id)
        return Speaker(
            heard=False,
            user_id=user_id,
            name=user.name if user is not None else None,
            role=role,
            may_approve=user is not None and not user.system_generated and role != "child",
        )
    current = speaking()
    if heard is None and current.run is not None and voices.listening:
        heard = await voices.async_hear(current.run.voice.pcm())
    return heard.speaker if heard is not None else None


@contextmanager
def speaking_turn(trace_id: str) -> Iterator[None]:
    """Mark the current task, and the tasks it creates meanwhile, as speaking ``trace_id``."""
    token = _SPEAKING.set(replace(speaking(), trace_id=trace_id))
    try:
        yield
    finally:
        _SPEAKING.reset(token)


def satellite_of(
    hass: HomeAssistant, satellite_id: str | None, device_id: str | None
) -> str | None:
    """Return the satellite a turn came from: the one named, else its device's, else None."""
    if satellite_id is not None:
        return satellite_id
    registry = er.async_get(hass)
    entries = er.async_entries_for_device(registry, device_id) if device_id else []
    return next((e.entity_id for e in entries if e.domain == Platform.ASSIST_SATELLITE), None)


def satellite_voice(hass: HomeAssistant, satellite: str) -> PipelineVoice | None:
    """Return the voice of the pipeline ``satellite`` runs, if Assist is set up and it exists."""
    if ASSIST_PIPELINE not in hass.config.components:
        return None
    return pipeline_voice(hass, satellite_pipeline(hass, satellite))


def satellite_pipeline(hass: HomeAssistant, satellite: str) -> str | None:
    """Return the id of the pipeline the satellite selected (None: the preferred one)."""
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        async_get_pipelines,
    )

    entity = async_get_entity(hass, satellite)
    select = entity.pipeline_entity_id if isinstance(entity, AssistSatelliteEntity) else None
    chosen = hass.states.get(select) if select is not None else None
    if chosen is None or chosen.state == PREFERRED:
        return None
    for pipeline in async_get_pipelines(hass):
        if pipeline.name == chosen.state:
            return pipeline.id
    LOGGER.debug("%s selects pipeline %r, which is gone", satellite, chosen.state)
    return None


def pipeline_voice(hass: HomeAssistant, pipeline_id: str | None) -> PipelineVoice | None:
    """Return a pipeline's voice (None: the preferred pipeline), if its TTS engine exists."""
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        async_get_pipeline,
    )

    pipeline = async_get_pipeline(hass, pipeline_id)
    engine = tts.async_resolve_engine(hass, pipeline.tts_engine)
    if engine is None:
        return None
    options = {tts.ATTR_VOICE: pipeline.tts_voice} if pipeline.tts_voice else {}
    return PipelineVoice(engine=engine, language=pipeline.tts_language, options=options)


@callback
def running_voice(hass: HomeAssistant, context: Context) -> PipelineVoice | None:
    """Return the voice of the running pipeline with ``context`` that ends in speech, or None."""
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        PipelineStage,
    )

    runs = async_pipeline_runs(hass, context)
    if runs is None or len(runs) != 1 or runs[0].end_stage != PipelineStage.TTS:
        return None
    return pipeline_voice(hass, runs[0].pipeline_id)
