"""A turn HA gave up on while its answer was on its way: keep only what could have been heard.

When a satellite starts a new pipeline (the person spoke over the answer, on HA's own
satellites as on ours), HA cancels the running pipeline first, and with it our agent in
the middle of its stream; the Assist dialog's stop does the same. The satellite was still
*processing* (HA sets *responding* only when its TTS stage begins, after the agent), so the
playback watcher has nothing to go by. ``async_abandoned`` decides, from what is known of
the audio at that moment:

- our voice took the turn: its timeline (each chunk's hand-over time and exact length) says
  which sentences could have begun playing by now;
- otherwise, on a satellite: from when HA opened its own streaming TTS (its rule of 60
  characters, ``STREAM_RESPONSE_CHARS`` in ``assist_pipeline``, which
  ``compat.stream_response_chars`` reads; ``ChatLogStream.tts_opened_at``), at the fastest
  rate a voice speaks; nothing if it had not opened it (a short answer is spoken only once
  the agent has finished);
- otherwise (a dialog with no speech known) what was shown stays.

Audio reaches the listener no sooner than it is handed on (a device that buffers, or HA's
converter, only delays it), so this is what *could* have been heard. The turn is cancelled
and stored as ``interrupted`` with only those sentences. A turn someone cut first (the
companion's own satellite knows to the sample what it played) is left to them.
"""

from __future__ import annotations

import time

from homeassistant.core import callback

from ..const import LOGGER
from ..engine.events import Heard
from ..engine.speech import EXACT_MARGIN, TurnSpeech, heard_sentences
from ..engine.turn.handle import Turn

BARGE_IN_REASON = "the person spoke"


@callback
def async_abandoned(
    turn: Turn,
    speech: TurnSpeech | None,
    *,
    satellite: str | None,
    tts_opened_at: float | None,
) -> None:
    """Cancel a running turn HA gave up on; keep the sentences that could have been heard."""
    if turn.finished is not None or turn.cancelled is not None:
        return
    heard = _heard(turn, speech, satellite=satellite, tts_opened_at=tts_opened_at)
    turn.cancel(BARGE_IN_REASON)
    if heard is None:
        return
    LOGGER.debug(
        "Turn %s: given up by HA on %s, %d of %d sentences heard",
        turn.trace_id,
        satellite or "a dialog",
        heard,
        len(turn.spoken),
    )
    turn.on_finished(lambda _result: turn.played(Heard.first(heard)))


def _heard(
    turn: Turn, speech: TurnSpeech | None, *, satellite: str | None, tts_opened_at: float | None
) -> int | None:
    """Return how many sentences could have been heard by now; None: no speech is known."""
    now = time.time()
    if speech is not None and speech.voice is not None:
        return speech.timeline.heard(now)
    if satellite is None:
        return None
    if tts_opened_at is None:
        return 0
    sentences = [sentence.tts_text for sentence in turn.spoken]
    heard = heard_sentences(sentences, now - tts_opened_at, None)
    return len(sentences) if heard is None else heard


def heard_by(
    turn: Turn, speech: TurnSpeech | None, at: float, *, begun: float | None, length: float | None
) -> int | None:
    """Return how many sentences of a finished turn had begun by ``at``; None: all played.

    Our voice's timeline says it exactly; else the time since the audio ``begun`` is set
    against ``length`` (exact, or None: estimated so a follow-up is not taken for a cut).
    """
    if speech is not None and speech.timeline.starts:
        timeline = speech.timeline
        return None if timeline.played_out(at, EXACT_MARGIN) else timeline.heard(at)
    if begun is None:
        return None
    return heard_sentences([sentence.tts_text for sentence in turn.spoken], at - begun, length)
