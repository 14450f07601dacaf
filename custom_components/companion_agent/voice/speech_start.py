"""Speech head starts, HA side: a turn's first sentence goes to its voice as soon as it exists.

HA's Assist pipeline opens the TTS stream only once the reply holds more than 60 characters
(``STREAM_RESPONSE_CHARS`` in ``assist_pipeline/pipeline.py``), or text and then a tool
call, or, for a shorter reply, when the agent has finished. Our agent and our voices live
in one integration, so the agent starts the first sentence's synthesis the moment the
sentence exists, in the voice that will speak it; that voice's stream, when HA opens it,
plays the audio already made (``engine/speech/head_start.py``) instead of asking again.

Which voice: the pipeline run that carries the turn, found by the conversation input's
context (HA hands the run's own context to the agent), and the TTS stream that run
prepared. Nothing is guessed: no such run, no streaming TTS, or an engine that is not one of
our voices, and there is no head start. A wrong guess could never play a wrong voice (a
voice claims only what was made in its own voice, for the same words), it would only waste
a synthesis. Assist keeps its running pipelines in a table it does not export; should a
newer HA change it, head starts stop and everything else goes on.

A cancelled turn (the person spoke over it) drops its head start, and a stream that is
playing it ends at once: its Piper connection closed, the WAV stream ended. This matters
because nothing else would stop it: HA's TTS cache reads our stream to its end in a task of
its own whoever listens (a satellite that stops reading stops nothing), and a cancelled
turn only ends HA's text stream, whose sentences already received would all be spoken. A
stream that played no head start (the first sentences differed) is not tied to a turn and
speaks what it was given; an answer whose stream HA had not opened yet says nothing (the
agent gives an interrupted turn no speech, and HA skips TTS for an empty answer).
"""

from __future__ import annotations

from collections.abc import Callable

from homeassistant.components.tts.const import DATA_COMPONENT
from homeassistant.core import Context, HomeAssistant, callback

from ..engine.events import SentenceOutput
from ..engine.turn.handle import Turn
from ..tts import CompanionTtsEntity

ASSIST_PIPELINE = "assist_pipeline"

type SentenceListener = Callable[[SentenceOutput], None]


@callback
def async_head_start(hass: HomeAssistant, context: Context, turn: Turn) -> SentenceListener:
    """Return the sentence listener that starts the turn's first sentence in its voice."""
    voice = async_pipeline_voice(hass, context)
    started = voice is None

    @callback
    def _on_sentence(sentence: SentenceOutput) -> None:
        """Synthesise the first spoken sentence ahead, once."""
        nonlocal started
        if started or not sentence.tts_text or voice is None:
            return
        started = True
        if voice.async_speak_ahead(sentence.tts_text, turn.trace_id):
            heads = voice.entry.runtime_data.engine.speech_starts
            turn.on_cancel(lambda _reason: heads.drop_turn(turn.trace_id))

    return _on_sentence


@callback
def async_pipeline_voice(hass: HomeAssistant, context: Context) -> CompanionTtsEntity | None:
    """Return our TTS entity the pipeline run with ``context`` streams to, or None."""
    if ASSIST_PIPELINE not in hass.config.components:
        return None
    from homeassistant.components.assist_pipeline.pipeline import (  # noqa: PLC0415
        KEY_ASSIST_PIPELINE,
    )

    table = getattr(hass.data[KEY_ASSIST_PIPELINE].pipeline_runs, "_pipeline_runs", None)
    if not isinstance(table, dict):
        return None
    runs = [
        run
        for by_id in table.values()
        if isinstance(by_id, dict)
        for run in by_id.values()
        if getattr(getattr(run, "context", None), "id", None) == context.id
    ]
    if len(runs) != 1:
        return None
    stream = getattr(runs[0], "tts_stream", None)
    if stream is None or not stream.supports_streaming_input:
        return None
    component = hass.data.get(DATA_COMPONENT)
    entity = component.get_entity(stream.engine) if component is not None else None
    if not isinstance(entity, CompanionTtsEntity) or entity.hass is not hass:
        return None
    return entity
