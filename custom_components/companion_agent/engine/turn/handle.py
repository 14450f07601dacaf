"""``Turn``: the handle a host holds on one running turn.

``items`` streams what the turn produces (text as it streams, sentences, tool events,
thinking); ``await turn.result`` waits for how it ended; ``cancel`` stops it at once (the
person spoke over it); ``played`` says its audio finished; ``heard_only`` says the person
spoke over the audio of a turn that had already finished writing. The turn itself runs in
a task of its own (``TurnRunner`` starts it), so a cancel never has to reach into the
host's task.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

from ..events import OutputItem, SentenceOutput, TextDelta, TurnOutcome, TurnResult

type PlaybackHook = Callable[[TurnResult], None]
type CancelListener = Callable[[str], None]
type CutHook = Callable[[str, TurnOutcome], None]
"""Called with the model text the person could have heard of a finished turn, and why."""


class Turn:
    """A running turn: its items, its result, and the host's two signals, cancel and played."""

    def __init__(
        self, trace_id: str, on_played: PlaybackHook, on_cut: CutHook | None = None
    ) -> None:
        """Start empty; the runner feeds items with ``put`` and ends the turn with ``finish``."""
        self.trace_id = trace_id
        self.result: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()
        self.cancel_reason: str | None = None
        self.cancel_outcome: TurnOutcome = "interrupted"
        self.first_spoken_at: float | None = None
        """When (``time.time()``) the host took the first sentence to speak: no audio before."""
        self._on_played = on_played
        self._on_cut = on_cut
        self._cut = False
        self._shown_length = 0
        self._marks: list[int] = []
        self._task: asyncio.Task[None] | None = None
        self._queue: deque[OutputItem] = deque()
        self._ready = asyncio.Event()
        self._closed = False
        self._settling = False
        self._begun = False
        self._iterating = False
        self._played = False
        self._shown: list[str] = []
        self._spoken: list[SentenceOutput] = []
        self._cancel_listeners: list[CancelListener] = []

    @property
    def items(self) -> AsyncIterator[OutputItem]:
        """Return the turn's output items; one consumer, taken once."""
        if self._iterating:
            raise RuntimeError("a turn's items can be taken only once")
        self._iterating = True
        return self._take()

    @property
    def shown(self) -> str:
        """Return the model text the host has taken, or still will: nothing dropped by a cancel."""
        queued = (i.model_text for i in self._queue if isinstance(i, TextDelta))
        return "".join([*self._shown, *queued])

    @property
    def spoken(self) -> tuple[SentenceOutput, ...]:
        """Return the sentences with speech the host has taken, or still will."""
        queued = (i for i in self._queue if isinstance(i, SentenceOutput) and i.tts_text)
        return (*self._spoken, *queued)

    def cancel(self, reason: str = "cancelled", *, failed: bool = False) -> None:
        """Stop the turn now: no more items; the model stream and unstarted calls stop.

        A tool call that already reached its tool finishes and is recorded; the turn is
        stored as ``interrupted`` with only what the host had taken. ``failed``: the host
        could not deliver the answer (its device failed): stored as ``failed`` instead,
        with what the model wrote, so the next turn knows it did not get through.
        Idempotent.
        """
        if self.cancel_reason is not None or self.result.done():
            return
        self.cancel_reason = reason
        self.cancel_outcome = "failed" if failed else "interrupted"
        self._close(drop=True)
        if self._task is not None and self._begun and not self._settling:
            self._task.cancel()  # a task that has not begun sees the reason when it does
        listeners, self._cancel_listeners = self._cancel_listeners, []
        for listener in listeners:
            listener(reason)

    def on_cancel(self, listener: CancelListener) -> None:
        """Call ``listener(reason)`` once if the turn is cancelled (its audio must stop too)."""
        if self.cancel_reason is None and not self.result.done():
            self._cancel_listeners.append(listener)

    def played(self) -> None:
        """Say the turn's audio has finished; ``on_after_playback`` runs once, if it spoke."""
        if self._played:
            return
        self._played = True
        if self.result.done():
            self._on_played(self.result.result())
        else:
            self.result.add_done_callback(lambda done: self._on_played(done.result()))

    def heard_only(self, sentences: int) -> None:
        """Say the person spoke over the finished turn after its first ``sentences`` sentences.

        The stored turn becomes ``interrupted`` and keeps only the model text up to the end
        of those sentences (the text the host had taken when it took the last of them).
        Once per turn; ignored while the turn runs (``cancel`` it) or when all were heard.
        """
        if self._cut or not self.result.done() or sentences >= len(self._marks):
            return
        self._cut = True
        end = self._marks[sentences - 1] if sentences > 0 else 0
        if self._on_cut is not None:
            self._on_cut("".join(self._shown)[:end], "interrupted")

    def undelivered(self) -> None:
        """Say the finished turn's audio never reached the person (its TTS or device failed).

        The stored turn becomes ``failed`` with no text heard, so the next turn knows it
        could not finish. Once per turn (shared with ``heard_only``); ignored while it runs.
        """
        if self._cut or not self.result.done():
            return
        self._cut = True
        if self._on_cut is not None:
            self._on_cut("", "failed")

    def bind(self, task: asyncio.Task[None]) -> None:
        """Attach the task that runs the turn (called once by the runner)."""
        self._task = task

    def begin(self) -> bool:
        """Say the turn's task has begun; return whether the turn was cancelled before that."""
        self._begun = True
        return self.cancel_reason is not None

    def settle(self) -> None:
        """Say the turn is being stored: a cancel now only ends the items, not the storing."""
        self._settling = True

    def put(self, item: OutputItem) -> None:
        """Queue one item for the host (dropped once the turn is cancelled)."""
        if self._closed:
            return
        self._queue.append(item)
        self._ready.set()

    def finish(self, result: TurnResult) -> None:
        """End the items and publish the result."""
        self._close(drop=False)
        self._cancel_listeners.clear()
        if not self.result.done():
            self.result.set_result(result)

    def _close(self, *, drop: bool) -> None:
        """End the item stream; ``drop`` throws away what the host has not taken."""
        self._closed = True
        if drop:
            self._queue.clear()
        self._ready.set()

    async def _take(self) -> AsyncIterator[OutputItem]:
        """Yield queued items in order until the turn ends or is cancelled."""
        while True:
            while not self._queue:
                if self._closed:
                    return
                self._ready.clear()
                await self._ready.wait()
            item = self._queue.popleft()
            match item:
                case TextDelta(model_text=text) if text:
                    self._shown.append(text)
                    self._shown_length += len(text)
                case SentenceOutput(tts_text=tts) if tts:
                    self._spoken.append(item)
                    self._marks.append(self._shown_length)
                    if self.first_spoken_at is None:
                        self.first_spoken_at = time.time()
            yield item
