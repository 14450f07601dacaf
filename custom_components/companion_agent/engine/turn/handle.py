"""``Turn``: the face a host holds on one running turn.

``items()`` streams what the turn produces (text as it streams, sentences, tool events,
thinking; ``Played`` if its audio finished meanwhile; ``Interrupted`` last if it was
cancelled); ``await turn.result`` waits for how it ended; ``cancel(reason)`` stops it at
once (the person spoke over it); ``played(heard)`` says its audio finished, and how much
of it the person heard; ``deadline`` is when it ends whatever happens. The turn runs in a
task of its own and writes through a private ``TurnSink`` (``sink.py``), so a cancel never
has to reach into the host's task and a host never writes into a turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

from ..events import EVERYTHING_HEARD, Heard, OutputItem, SentenceOutput, TurnResult
from ..speech.turn_speech import SpeechGuess
from .sink import CancelListener, FinishListener, TurnSink


class Turn:
    """A running turn: its items, its result, and the host's two signals, cancel and played."""

    __slots__ = ("_sink",)

    def __init__(self, sink: TurnSink) -> None:
        """Show ``sink``'s turn to the host (the runner makes turns; hosts never do)."""
        self._sink = sink

    @property
    def trace_id(self) -> str:
        """Return the turn's trace id (its request's)."""
        return self._sink.trace_id

    @property
    def deadline(self) -> float:
        """Return the loop time (``loop.time()``) by which the turn ends, whatever happens."""
        return self._sink.deadline

    @property
    def result(self) -> Awaitable[TurnResult]:
        """Return what to await for how the turn ended (it never raises)."""
        return self._sink.result

    @property
    def finished(self) -> TurnResult | None:
        """Return how the turn ended, or None while it runs."""
        result = self._sink.result
        return result.result() if result.done() else None

    @property
    def spoken(self) -> tuple[SentenceOutput, ...]:
        """Return the sentences with speech the host has taken, or still will."""
        return self._sink.spoken

    @property
    def first_spoken_at(self) -> float | None:
        """Return when (``time.time()``) the host took the first sentence to speak, if it has."""
        return self._sink.first_spoken_at

    @property
    def cancelled(self) -> str | None:
        """Return why the turn was cancelled, or None if it was not."""
        return self._sink.cancel_reason

    def waiting_for_tools(self) -> bool:
        """Say whether the turn waits for a tool call now (its speech pauses meanwhile)."""
        return self._sink.waiting_for_tools

    def speech(self) -> AsyncIterator[str]:
        """Return the speech text of each sentence the host takes, for a voice to speak.

        From the first sentence, as the host takes them; any number of readers. It ends
        when the turn does, or at once when the turn is cancelled (its audio must stop).
        """
        return self._sink.speech()

    def guessed_speech(self) -> AsyncIterator[str | SpeechGuess]:
        """Return what ``speech`` does, with guesses of the first sentence before it comes.

        A voice may begin on a guess (``speech/turn_speech.py``) and is heard only if right.
        """
        return self._sink.guessed_speech()

    def items(self) -> AsyncIterator[OutputItem]:
        """Return the turn's output items; one consumer, taken once."""
        return self._sink.take()

    def cancel(self, reason: str = "cancelled", *, failed: bool = False) -> None:
        """Stop the turn now: no more items; the model stream and unstarted calls stop.

        A tool call that already reached its tool finishes and is recorded; the turn is
        stored as ``interrupted`` with only what the host had taken. ``failed``: the host
        could not deliver the answer (its device failed): stored as ``failed`` instead,
        with what the model wrote, so the next turn knows it did not get through.
        The items end with one ``Interrupted``. Idempotent; ignored once the turn ended.
        """
        self._sink.cancel(reason, failed=failed)

    def played(self, heard: Heard = EVERYTHING_HEARD) -> None:
        """Say the turn's audio has finished, and how much of it reached the person.

        ``Heard.everything()`` (the default): ``on_after_playback`` runs once, when the
        turn has ended, if it spoke. ``Heard.first(n)``: the person spoke over the finished
        turn after ``n`` sentences; the stored turn becomes ``interrupted`` and keeps only
        the model text up to the end of those sentences (nothing if that is all it showed:
        a turn cut while the model still wrote loses the words no sentence had spoken yet).
        ``Heard.undelivered()``: the finished turn's audio never reached the person; the
        stored turn becomes ``failed`` with no text heard. The last two are taken once per
        turn, and only once it has ended (``cancel`` a turn that still runs).
        """
        self._sink.played(heard)

    def on_cancel(self, listener: CancelListener) -> None:
        """Call ``listener(reason)`` once if the turn is cancelled (its audio must stop too)."""
        self._sink.on_cancel(listener)

    def on_finished(self, listener: FinishListener) -> None:
        """Call ``listener(result)`` once the turn has ended (from the loop, as a callback)."""
        self._sink.result.add_done_callback(lambda done: listener(done.result()))
