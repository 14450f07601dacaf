"""``TurnSink``: the runner's side of one turn, and the machinery behind the host's ``Turn``.

The runner ``put``s items and ``finish``es the turn here; the host's ``Turn`` (``handle.py``)
reads them and sends its two signals, a cancel and "played". A cancel drops what the host
has not taken and ends the items with one ``Interrupted``; "played" while the turn still
streams is queued as a ``Played`` item, so the host sees both in order with the text.
What the host took is kept (``shown``, ``spoken``): a cancelled turn stores only that.
``speech()`` follows the sentences the host takes, for the voice that speaks them.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

from ..events import (
    Heard,
    Interrupted,
    OutputItem,
    Played,
    SentenceOutput,
    TextDelta,
    ToolCallEvent,
    TurnOutcome,
    TurnResult,
)
from ..speech.turn_speech import SpeechGuess

type PlaybackHook = Callable[[TurnResult], None]
type CancelListener = Callable[[str], None]
type FinishListener = Callable[[TurnResult], None]
type CutHook = Callable[[str, TurnOutcome], None]
"""Called with the model text the person could have heard of a finished turn, and why."""


class TurnSink:
    """One turn's queue of items, its result, and what the host took and said about it."""

    def __init__(
        self, trace_id: str, deadline: float, on_played: PlaybackHook, on_cut: CutHook
    ) -> None:
        """Start empty; ``deadline`` is the loop time by which the turn ends."""
        self.trace_id = trace_id
        self.deadline = deadline
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
        self._storing = False
        self._begun = False
        self._taken = False
        self._played = False
        self._shown: list[str] = []
        self._spoken: list[SentenceOutput] = []
        self._cancel_listeners: list[CancelListener] = []
        self._spoken_signal = asyncio.Event()
        self._over = False
        self._guess = ""
        self._guesses = 0
        self._running_tools: set[str] = set()

    @property
    def shown(self) -> str:
        """Return the model text the host has taken, or still will: nothing dropped by a cancel."""
        queued = (i.model_text for i in self._queue if isinstance(i, TextDelta))
        return "".join([*self._shown, *queued])

    @property
    def waiting_for_tools(self) -> bool:
        """Say whether a tool call of the turn runs now (it has begun and not ended)."""
        return bool(self._running_tools) and not self._closed

    @property
    def spoken(self) -> tuple[SentenceOutput, ...]:
        """Return the sentences with speech the host has taken, or still will."""
        queued = (i for i in self._queue if isinstance(i, SentenceOutput) and i.tts_text)
        return (*self._spoken, *queued)

    def bind(self, task: asyncio.Task[None]) -> None:
        """Attach the task that runs the turn (called once by the runner)."""
        self._task = task

    def begin(self) -> bool:
        """Say the turn's task has begun; return whether the turn was cancelled before that."""
        self._begun = True
        return self.cancel_reason is not None

    def storing(self) -> None:
        """Say the turn is being stored: a cancel now only ends the items, not the storing."""
        self._storing = True

    def put(self, item: OutputItem) -> None:
        """Queue one item for the host (dropped once the turn is cancelled)."""
        if self._closed:
            return
        if isinstance(item, ToolCallEvent):
            if item.status == "running":
                self._running_tools.add(item.tool_id)
            else:
                self._running_tools.discard(item.tool_id)
        self._queue.append(item)
        self._ready.set()

    def finish(self, result: TurnResult) -> None:
        """End the items and publish the result."""
        self._close(drop=False)
        self._spoken_changed(over=True)
        self._cancel_listeners.clear()
        if not self.result.done():
            self.result.set_result(result)

    def take(self) -> AsyncIterator[OutputItem]:
        """Return the items for the host's one consumer."""
        if self._taken:
            raise RuntimeError("a turn's items can be taken only once")
        self._taken = True
        return self._take()

    def cancel(self, reason: str, *, failed: bool) -> None:
        """Stop the turn now (see ``Turn.cancel``); idempotent."""
        if self.cancel_reason is not None or self.result.done():
            return
        self.cancel_reason = reason
        self.cancel_outcome = "failed" if failed else "interrupted"
        self._close(drop=True)
        self._queue.append(Interrupted(reason=reason, outcome=self.cancel_outcome))
        if self._task is not None and self._begun and not self._storing:
            self._task.cancel()  # a task that has not begun sees the reason when it does
        self._spoken_changed(over=True)
        listeners, self._cancel_listeners = self._cancel_listeners, []
        for listener in listeners:
            listener(reason)

    async def speech(self) -> AsyncIterator[str]:
        """Yield the speech text of each sentence the host takes, from the first, as it does.

        Any number of readers may follow; each ends once the turn ends (with the sentences
        the host has yet to take), or at once when it is cancelled.
        """
        async for text in self.guessed_speech():
            if isinstance(text, str):
                yield text

    async def guessed_speech(self) -> AsyncIterator[str | SpeechGuess]:
        """Yield what ``speech`` does, and before the first sentence each newer guess of it."""
        taken = guessed = 0
        while self.cancel_reason is None:
            spoken = self.spoken if self._over else self._spoken
            if taken < len(spoken):
                yield spoken[taken].tts_text
                taken += 1
                continue
            if self._over:
                return
            if taken == 0 and self._guesses > guessed:
                guessed = self._guesses
                yield SpeechGuess(self._guess)
                continue
            await self._spoken_signal.wait()

    def guess(self, text: str) -> None:
        """Note the first sentence's likely speech, before it is decided (a voice may begin)."""
        if not self._closed and not self.spoken:
            self._guess, self._guesses = text, self._guesses + 1
            self._spoken_changed()

    def on_cancel(self, listener: CancelListener) -> None:
        """Call ``listener(reason)`` once if the turn is cancelled."""
        if self.cancel_reason is None and not self.result.done():
            self._cancel_listeners.append(listener)

    def played(self, heard: Heard) -> None:
        """Take the host's word on the turn's audio (see ``Turn.played``)."""
        if heard.sentences is None:
            self._played_all(heard)
        elif heard.delivered:
            self._heard_only(heard)
        else:
            self._undelivered()

    def _played_all(self, heard: Heard) -> None:
        """Run ``on_after_playback`` once, when the turn has its result."""
        if self._played:
            return
        self._played = True
        self.put(Played(heard=heard))
        if self.result.done():
            self._on_played(self.result.result())
        else:
            self.result.add_done_callback(lambda done: self._on_played(done.result()))

    def _heard_only(self, heard: Heard) -> None:
        """Mark the finished turn interrupted after the sentences that were heard."""
        sentences = heard.sentences or 0
        if self._cut or not self.result.done() or sentences > len(self._marks):
            return
        shown = "".join(self._shown)
        end = self._marks[sentences - 1] if sentences > 0 else 0
        if not shown[end:].strip():
            return  # every word it showed was heard
        self._cut = True
        self._on_cut(shown[:end], "interrupted")

    def _undelivered(self) -> None:
        """Mark the finished turn failed with nothing heard."""
        if self._cut or not self.result.done():
            return
        self._cut = True
        self._on_cut("", "failed")

    def _spoken_changed(self, *, over: bool = False) -> None:
        """Wake the speech readers: a sentence was taken, or no more will be."""
        self._over = self._over or over
        self._spoken_signal.set()
        self._spoken_signal = asyncio.Event()

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
                    self._spoken_changed(over=True)
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
                    self._spoken_changed()
            yield item
