"""Cut a watched turn down to what its device says the person heard.

The companion's own satellite knows how many seconds of an answer played when the person
spoke over it (or when it went away), and, with the companion's voice, where each
sentence began. A turn that still runs is cancelled (stored as ``failed`` when the device
went away); once it has ended it keeps only the sentences that began within the seconds
played (``engine/speech/audio_length.sentences_heard``): none if nothing played, all if
the whole answer had. The watch's ``on_heard`` hears the result once, as it was heard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..const import LOGGER
from ..engine.events import Heard, TurnResult
from ..engine.pipeline import join_speech
from ..engine.speech import AudioProgress, sentences_heard
from ..engine.turn.handle import Turn

DEVICE_LOST_REASON = "the device went away"

type HeardCallback = Callable[[TurnResult], None]


def cut_turn(
    turn: Turn,
    progress: AudioProgress,
    on_heard: HeardCallback | None,
    *,
    reason: str,
    failed: bool,
) -> None:
    """Stop ``turn`` (for ``reason``, or as lost when ``failed``); keep what was heard."""
    running = turn.finished is None
    if running:
        turn.cancel(DEVICE_LOST_REASON if failed else reason, failed=failed)
    sentences = [sentence.tts_text for sentence in turn.spoken]
    heard = sentences_heard(sentences, progress)
    if heard is None and running:
        heard = len(sentences)  # all it had said was heard; it was still speaking
    LOGGER.debug(
        "Turn %s: cut after %.2f s (%s of %d sentences heard, %s)",
        turn.trace_id,
        progress.played,
        "all" if heard is None else heard,
        len(sentences),
        "marked" if progress.starts else "estimated",
    )

    def cut(result: TurnResult) -> None:
        """Keep what was heard of the ended turn; tell ``on_heard``."""
        if heard is not None and result.outcome != "failed":
            if failed and heard == 0:
                turn.played(Heard.undelivered())
            else:
                keep_heard(turn, heard, result, on_heard)
                return
        elif heard is None:
            turn.played()
        if on_heard is not None:
            on_heard(result)

    turn.on_finished(cut)


def keep_heard(turn: Turn, heard: int, result: TurnResult, on_heard: HeardCallback | None) -> None:
    """Keep only the first ``heard`` sentences of the ended turn; tell ``on_heard`` so."""
    turn.played(Heard.first(heard))
    if on_heard is not None:
        spoken = join_speech(turn.spoken[:heard])
        on_heard(replace(result, outcome="interrupted", spoken=spoken))
