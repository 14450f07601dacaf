"""``TurnSpeech``: one turn's speech, from its sentences to the audio a host hands on.

The turn's sentences are the speech text of the ``SentenceOutput``s its host takes, which
the output pipeline cut and cleaned: the one place that happens. One voice at a time
speaks them. A host whose agent and voice live together ``start``s that voice as soon as it
knows which one the answer will be heard in: the audio is made into a bounded buffer
before the host's TTS stream opens (HA opens it only after 60 characters of reply). The
stream (``audio``) plays that buffer, then the rest as it comes; a stream that asks for
another voice drops the buffer and has the sentences spoken again from the first. Only the
first stream that asks speaks: a turn is heard once. Every
chunk handed out is noted on the turn's ``AudioTimeline``, so a host that cuts the turn
knows which sentences could have begun playing. ``stop`` (the turn was cancelled) ends
the audio at once: the synthesis is closed, mid-chunk if need be.

``SpeechTurns`` keeps the speech of a host's recent turns, bounded: at most ``capacity``
turns, at most ``max_ahead`` syntheses running ahead, each turn forgotten ``ttl`` seconds
after it ended (a synthesis nobody listened to is stopped then).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from .first_guess import SpeechGuess, drop_read, guessed_audio, next_chunk
from .synthesizer import AudioChunk
from .timeline import AudioTimeline

DEFAULT_CAPACITY = 16
DEFAULT_MAX_AHEAD = 4
DEFAULT_TTL = 30.0
MAX_TEXTS = 1024
MAX_BUFFERED_BYTES = 4 * 1024 * 1024
"""Audio made ahead and not yet played: about 95 s at 22.05 kHz; the synthesis waits."""

type Synthesis = Callable[[AsyncIterator[str]], AsyncGenerator[AudioChunk]]
"""Speak sentences in one voice: the audio of each, in order, numbered from 0."""
type SentenceSource = Callable[[], AsyncIterator[str | SpeechGuess]]
"""Return the turn's sentences from the first, as the host takes them (a guess may come
before the first: ``first_guess.py``)."""


class _Ahead:
    """A synthesis running before anyone listens: its chunks wait in a bounded buffer."""

    def __init__(self, voice: str, audio: AsyncGenerator[AudioChunk], limit: int) -> None:
        """Start taking ``audio`` into the buffer; pause while it holds ``limit`` bytes."""
        self.voice = voice
        self._limit = limit
        self._chunks: deque[AudioChunk] = deque()
        self._bytes = 0
        self._changed = asyncio.Event()
        self._room = asyncio.Event()
        self._done = False
        self._error: Exception | None = None
        self._task = asyncio.create_task(self._fill(audio), name=f"speech ahead in {voice}")

    async def drain(self) -> AsyncGenerator[AudioChunk]:
        """Yield the chunks made so far, then the rest as they come; raise what it raised."""
        while True:
            while self._chunks:
                chunk = self._chunks.popleft()
                self._bytes -= len(chunk.audio)
                self._room.set()
                yield chunk
            if self._done:
                if self._error is not None:
                    raise self._error
                return
            self._changed.clear()
            await self._changed.wait()

    def stop(self) -> None:
        """Cancel the synthesis (its own ``finally`` closes its connection)."""
        self._task.cancel()

    async def _fill(self, audio: AsyncGenerator[AudioChunk]) -> None:
        """Buffer the synthesis, waiting for room; keep its error for the stream."""
        try:
            async for chunk in audio:
                self._chunks.append(chunk)
                self._bytes += len(chunk.audio)
                self._changed.set()
                while self._bytes >= self._limit:
                    self._room.clear()
                    await self._room.wait()
        except Exception as err:  # handed to the stream, which raises it
            self._error = err
        finally:
            self._done = True
            self._changed.set()
            await audio.aclose()


class TurnSpeech:
    """A turn's sentences, the voice speaking them, and when each one's audio was handed on."""

    def __init__(
        self, trace_id: str, sentences: SentenceSource, *, limit: int = MAX_BUFFERED_BYTES
    ) -> None:
        """Follow turn ``trace_id``, whose sentences ``sentences()`` yields; speak nothing yet."""
        self.trace_id = trace_id
        self.timeline = AudioTimeline()
        self.stopped = asyncio.Event()
        self.voice: str | None = None
        """The voice it is (or was last) spoken in; None: no voice took it yet."""
        self.claimed = False
        """A stream has asked for its audio."""
        self.texts: list[str] = []
        """The sentences read so far, in order: sentence ``n``'s audio speaks ``texts[n]``."""
        self._sentences = sentences
        self._limit = limit
        self._ahead: _Ahead | None = None

    @property
    def ahead(self) -> bool:
        """Say whether a synthesis runs ahead of any stream."""
        return self._ahead is not None

    def start(self, voice: str, synthesis: Synthesis) -> bool:
        """Start speaking in ``voice`` ahead of the stream; False if spoken or started already."""
        if self._ahead is not None or self.claimed or self.stopped.is_set():
            return False
        self.voice = voice
        self._ahead = _Ahead(voice, self._spoken(synthesis), self._limit)
        return True

    async def audio(self, voice: str, synthesis: Synthesis) -> AsyncGenerator[AudioChunk]:
        """Yield the turn's audio in ``voice``: the synthesis ahead if it speaks it, else anew.

        Each chunk is noted on the timeline as it is handed out; the audio ends at once
        when the turn is stopped. A turn is spoken once: a stream that asks after another
        took it gets nothing (HA's stream, when the host plays the turn's audio itself).
        """
        if self.claimed:
            return
        ahead, self._ahead = self._ahead, None
        self.claimed = True
        if ahead is not None and ahead.voice != voice:
            ahead.stop()
            ahead = None
        self.timeline.reset()
        self.voice = voice
        source = ahead.drain() if ahead is not None else self._spoken(synthesis)
        try:
            async for chunk in until_stopped(source, self.stopped):
                self.timeline.handed(chunk, time.time())
                yield chunk
        finally:
            if ahead is not None:
                ahead.stop()

    def _spoken(self, synthesis: Synthesis) -> AsyncGenerator[AudioChunk]:
        """Return the turn's audio in one voice, from its first sentence (maybe on a guess)."""
        return guessed_audio(lambda run: synthesis(run.sentences(self._sentences(), self._note)))

    def _note(self, index: int, text: str) -> None:
        """Note sentence ``index``'s text the first time a synthesis takes it (bounded)."""
        if index == len(self.texts) and index < MAX_TEXTS:
            self.texts.append(text)

    def stop(self) -> None:
        """End the turn's audio now: the synthesis ahead, and the stream playing it."""
        self.stopped.set()
        self.drop_ahead()

    def drop_ahead(self) -> None:
        """Stop the synthesis running ahead, if no stream took it."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.stop()


class SpeechTurns:
    """The speech of a host's recent turns, by trace id (bounded; see the module)."""

    def __init__(
        self,
        *,
        capacity: int = DEFAULT_CAPACITY,
        max_ahead: int = DEFAULT_MAX_AHEAD,
        ttl: float = DEFAULT_TTL,
    ) -> None:
        """Keep at most ``capacity`` turns and ``max_ahead`` syntheses ahead."""
        self._capacity = capacity
        self._max_ahead = max_ahead
        self._ttl = ttl
        self._turns: OrderedDict[str, TurnSpeech] = OrderedDict()
        self._spoken: dict[str, str] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}

    @property
    def running_ahead(self) -> int:
        """Return how many syntheses run ahead of their streams now."""
        return sum(1 for speech in self._turns.values() if speech.ahead)

    def follow(self, speech: TurnSpeech) -> TurnSpeech:
        """Keep ``speech`` (the newest) and return it; forget the oldest beyond the capacity."""
        self._turns[speech.trace_id] = speech
        while len(self._turns) > self._capacity:
            self._forget(next(iter(self._turns)))
        return speech

    def get(self, trace_id: str | None) -> TurnSpeech | None:
        """Return the speech of turn ``trace_id``, if it is kept."""
        return self._turns.get(trace_id) if trace_id is not None else None

    def spoken(self, text: str) -> TurnSpeech | None:
        """Return the newest ended turn whose whole speech is ``text`` (spacing aside)."""
        wanted = " ".join(text.split())
        if not wanted:
            return None
        for trace_id in reversed(self._turns):
            if self._spoken.get(trace_id) == wanted:
                return self._turns[trace_id]
        return None

    def start(self, trace_id: str, voice: str, synthesis: Synthesis) -> bool:
        """Start turn ``trace_id``'s speech in ``voice`` ahead; the oldest ahead makes room."""
        speech = self._turns.get(trace_id)
        if speech is None:
            return False
        ahead = [s for s in self._turns.values() if s.ahead]
        for oldest in ahead[: max(0, len(ahead) - self._max_ahead + 1)]:
            oldest.drop_ahead()
        return speech.start(voice, synthesis)

    def ended(self, trace_id: str, spoken: str) -> None:
        """Note turn ``trace_id`` ended having said ``spoken``; forget it ``ttl`` s later."""
        if trace_id not in self._turns:
            return
        self._spoken[trace_id] = " ".join(spoken.split())
        loop = asyncio.get_running_loop()
        self._timers[trace_id] = loop.call_later(self._ttl, self._forget, trace_id)

    def close(self) -> None:
        """Stop every turn's speech and forget them all."""
        for trace_id in list(self._turns):
            speech = self._turns[trace_id]
            self._forget(trace_id)
            speech.stop()

    def _forget(self, trace_id: str) -> None:
        """Forget one turn; a synthesis of it that nobody listens to stops."""
        speech = self._turns.pop(trace_id, None)
        self._spoken.pop(trace_id, None)
        if (timer := self._timers.pop(trace_id, None)) is not None:
            timer.cancel()
        if speech is not None:
            speech.drop_ahead()


async def until_stopped(
    audio: AsyncGenerator[AudioChunk], stopped: asyncio.Event
) -> AsyncGenerator[AudioChunk]:
    """Yield ``audio`` until ``stopped`` is set, then close it at once (mid-chunk if need be)."""
    stop = asyncio.create_task(stopped.wait())
    step: asyncio.Task[AudioChunk | None] | None = None
    try:
        while not stopped.is_set():
            step = asyncio.create_task(next_chunk(audio))
            await asyncio.wait((step, stop), return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                return
            chunk = step.result()  # raises what the audio raised
            step = None
            if chunk is None:
                return
            yield chunk
    finally:
        stop.cancel()
        await drop_read(step)  # closes the audio's socket mid-chunk
        await audio.aclose()
