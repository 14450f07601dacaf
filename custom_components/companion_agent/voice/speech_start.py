"""Speech ahead of HA: a turn starts speaking in its voice before HA's TTS stream opens.

HA's Assist pipeline opens the TTS stream only once the reply holds more than 60 characters
(``STREAM_RESPONSE_CHARS`` in ``assist_pipeline``, 2026.2.3; ``compat.stream_response_chars``
reads HA's own), or text and then a tool call, or, for
a shorter reply, when the agent has finished. Our agent and our voices live in one
integration, so when the turn's pipeline speaks with one of our voices, that voice starts
on the turn's sentences at once (``TurnSpeech.start``: the server check now, each sentence
the moment it exists), and HA's stream, when it opens, plays what was made.

Which voice, found without guessing:

- a satellite's run (the turn names it, or its device has one): the pipeline the
  satellite's *Assistant* select names, read through public APIs (``pipeline_voice.py``);
- a run without a satellite (the browser's Assist dialog, the websocket API): HA offers no
  public way, as ``ConversationInput`` and the ``ChatLog`` name no pipeline. The fallback
  reads Assist's table of running pipelines, which it does not export, for the one run
  with the turn's context (``compat.async_pipeline_runs``, the one place that reads it).
  Anything missing or of another shape (a newer HA) and there is no head start: the voice
  then starts when HA's stream opens, a warning and a repair issue say so once, and
  everything else goes on.

A text conversation (``conversation.process``) has no pipeline listening to its ChatLog:
nothing starts. A wrong voice could never play (a stream asking for another voice speaks
the sentences again in its own); it would only waste a synthesis, bounded in
``SpeechTurns``. A cancelled turn stops its speech at once (the engine wires that).

On the companion's own satellite the run does not wait for HA's stream at all: the turn
runs inside the run's pipeline (``CURRENT_RUN``), so the run is handed the turn's audio as
it starts (``SatelliteRun.speak_ahead``) and the first sentence plays while HA still waits
for its 60 characters. HA still opens its stream and runs our voice for it (its TTS manager
does so whether or not anyone reads), but that stream speaks nothing: a turn is spoken once
(``TurnSpeech.audio``).
"""

from __future__ import annotations

from functools import partial

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant, callback

from ..compat import async_get_entity, async_pipeline_runs
from ..engine.turn.handle import Turn
from ..tts import CompanionTtsEntity
from .pipeline_voice import (
    ASSIST_PIPELINE,
    PipelineVoice,
    pipeline_voice,
    satellite_of,
    satellite_voice,
)
from .satellite.run import CURRENT_RUN

type OurVoice = tuple[CompanionTtsEntity, dict[str, str]]
"""One of our TTS entities, and the options the pipeline asks it for (its voice)."""


@callback
def async_pipeline_voice(
    hass: HomeAssistant, user_input: conversation.ConversationInput
) -> OurVoice | None:
    """Return our voice the turn's pipeline speaks with; None: not ours, or not known."""
    if ASSIST_PIPELINE not in hass.config.components:
        return None
    satellite = satellite_of(hass, user_input.satellite_id, user_input.device_id)
    if satellite is not None:
        voice = satellite_voice(hass, satellite)
    else:
        voice = _running_voice(hass, user_input.context)
    if voice is None:
        return None
    entity = async_get_entity(hass, voice.engine)
    if not isinstance(entity, CompanionTtsEntity) or entity.hass is not hass:
        return None
    return entity, voice.options


@callback
def async_speak_ahead(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    turn: Turn,
) -> bool:
    """Start the turn's speech in the voice its pipeline will ask for, if it is one of ours."""
    if chat_log.delta_listener is None:  # no pipeline listens: no TTS stream will open
        return False
    found = async_pipeline_voice(hass, user_input)
    if found is None:
        return False
    entity, options = found
    if not entity.async_speak_ahead(turn.trace_id, options):
        return False
    if (run := CURRENT_RUN.get()) is not None:  # our satellite's run: it plays the audio now
        run.speak_ahead(partial(entity.async_turn_audio, turn.trace_id, options))
    return True


@callback
def _running_voice(hass: HomeAssistant, context: Context) -> PipelineVoice | None:
    """Return the voice of the running pipeline with ``context`` that ends in speech, or None."""
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        PipelineStage,
    )

    runs = async_pipeline_runs(hass, context)
    if runs is None or len(runs) != 1 or runs[0].end_stage != PipelineStage.TTS:
        return None
    return pipeline_voice(hass, runs[0].pipeline_id)
