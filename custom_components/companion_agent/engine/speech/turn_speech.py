"""``TurnSpeech``: one turn's speech, from its sentences to the audio a host hands on.

The turn's sentences are the speech text of the ``SentenceOutput``s its host takes, which
the output pipeline cut and cleaned: the one place that happens. Each sentence reaches a
voice once: a turn is synthesised at most once per voice (a ``_Recording``), and every
stream that asks for it in that voice reads the same recording from its start, never a
second synthesis. A host whose agent and voice live together ``start``s the voice as soon
as it knows which one the answer will be heard in: the audio is made before the host's TTS
stream opens (HA opens it only after 60 characters of reply), into a bounded buffer while
nobody reads. A stream in another voice has the sentences spoken again in its own; a
recording begun ahead that nobody read is then dropped (a wrong guess of the voice).

The first sentence may be spoken on a guess, begun before the next token decides it and
heard only once it is decided. A turn's speech source may yield a ``SpeechGuess`` before
its first sentence: the speech the first sentence will have if the text so far ends it
(``pipeline/first_guess.py``). ``guessed_audio`` then hands the voice the guess as
sentence 0 at once, and holds that sentence's audio until the real first sentence comes.
The same text (spacing aside): the audio goes on, one token's wait earlier than it could
have begun. Other text, or a newer guess (the text went on without ending): the held audio
is dropped unheard, the synthesis closed, and the voice asked again from the real first
sentence. A voice makes audio far slower than a token comes, so the wait for the decision
is almost never heard; after ``MAX_WRONG`` wrong guesses a turn is spoken without guessing.

The first stream that reads the turn is the one heard (``TurnAudio.primary``): its chunks
are noted on the turn's ``AudioTimeline``, so a host that cuts the turn knows which
sentences could have begun playing, and only it reports subtitles and marks. A later
reader (HA's stream when the host plays the turn's audio itself, a second fetch of the
same URL) gets the same audio, quietly.

While the turn waits for a tool (``waiting``), a reader is never left without audio: once
what it handed on has all but played, it hands on ``KEEP_ALIVE_SECONDS`` of silence at a
time (in the voice's own format, as part of the sentence before), so a device that stops
working when its stream pauses (HA's Voice PE wedges after 5 s) keeps playing. A reader
whose host converts the audio and holds some back first (HA's ffmpeg, before 2026.11, lets
nothing out before seconds of audio came in) is ``prime``d with that many seconds: when
the turn starts waiting, it is handed what it lacks of them as silence at once, so a
holding line is heard when it is said, not seconds later; then a trickle keeps the
converted stream moving while the device plays that down. The price: an answer that comes
within a few seconds of the line waits behind what is left of it. ``stop``
(the turn was cancelled) ends the audio at once: the synthesis is closed, mid-chunk if
need be.

``SpeechTurns`` keeps the speech of a host's recent turns, bounded: at most ``capacity``
turns, at most ``max_ahead`` syntheses running ahead, each turn forgotten ``ttl`` seconds
after it ended (a synthesis nobody read is stopped then). A turn is found by its trace id,
by its whole speech once it ended (``spoken``), or, while it is written, by the start of
the text it wrote (``writing``): what a host's TTS stream is handed first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass

from .audio_timeline import AudioTimeline
from .synthesizer import AudioChunk

LOGGER = logging.getLogger(__name__)

MAX_WRONG = 3


@dataclass(frozen=True, slots=True)
class SpeechGuess:
    """The speech the turn's first sentence will have if the text so far ends it."""

    text: str


type Noted = Callable[[int, str], None]
"""Told each real sentence a synthesis takes: its number and its text."""


def same_speech(one: str, other: str) -> bool:
    """Say whether two speech texts say the same (spacing aside)."""
    return one.split() == other.split()


class GuessedRun:
    """One synthesis of a turn, its sentence 0 begun on a guess when one comes first."""

    def __init__(self, *, guessing: bool) -> None:
        """Start with no guess; ``guessing`` False takes the real sentences only."""
        self.guess: str | None = None
        """The text sentence 0 was begun on, if a guess came first."""
        self.wrong = False
        self._guessing = guessing
        self._decided = asyncio.Event()

    @property
    def pending(self) -> bool:
        """Say whether sentence 0 is a guess not decided yet (its audio is held)."""
        return self.guess is not None and not self._decided.is_set()

    async def sentences(
        self, source: AsyncIterator[str | SpeechGuess], noted: Noted
    ) -> AsyncIterator[str]:
        """Yield the sentences for the synthesis: the guess first, when it comes first."""
        index = 0
        async for item in source:
            if isinstance(item, SpeechGuess):
                if index > 0 or not self._guessing:
                    continue
                if self.guess is not None:
                    self._wrong()  # the text went on: that was no end
                    return
                self.guess = item.text
                yield item.text
                continue
            noted(index, item)
            if index == 0 and self.guess is not None:
                if not same_speech(item, self.guess):
                    self._wrong()
                    return
                self._decided.set()
            else:
                yield item
            index += 1
        if self.pending:
            self._wrong()  # the turn ended, or was cancelled, before its first sentence

    async def gate(self, audio: AsyncGenerator[AudioChunk]) -> AsyncGenerator[AudioChunk]:
        """Yield ``audio``, the guessed sentence's held until decided: then given or dropped."""
        held: list[AudioChunk] = []
        decided = asyncio.create_task(self._decided.wait())
        step: asyncio.Task[AudioChunk | None] | None = None
        try:
            while True:
                if step is None:
                    step = asyncio.create_task(next_chunk(audio))
                waits = (step,) if decided.done() else (step, decided)
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if self.wrong:
                    return
                if decided.done() and held:
                    for chunk in held:
                        yield chunk
                    held.clear()
                if not step.done():
                    continue
                got, step = step.result(), None
                if got is None:
                    return
                if self.pending and got.sentence == 0:
                    held.append(got)
                else:
                    yield got
        finally:
            decided.cancel()
            await drop_read(step)

    def _wrong(self) -> None:
        """Mark the guess wrong: its audio is never handed on."""
        self.wrong = True
        self._decided.set()


async def guessed_audio(
    speak: Callable[[GuessedRun], AsyncGenerator[AudioChunk]],
) -> AsyncGenerator[AudioChunk]:
    """Yield a turn's audio, its first sentence begun on a guess (see the module)."""
    wrong = 0
    while True:
        run = GuessedRun(guessing=wrong < MAX_WRONG)
        audio = speak(run)
        try:
            async for chunk in run.gate(audio):
                yield chunk
        finally:
            await audio.aclose()
        if not run.wrong:
            return
        wrong += 1
        LOGGER.debug("A first-sentence guess was wrong (%d); speaking it again", wrong)


async def next_chunk(audio: AsyncGenerator[AudioChunk]) -> AudioChunk | None:
    """Return the next chunk, or None at the end."""
    return await anext(audio, None)


async def drop_read(step: asyncio.Task[AudioChunk | None] | None) -> None:
    """Cancel a read of the audio still under way, and wait for it to end.

    The audio's own ``finally`` closes its connection; what the read raised is seen here,
    since the audio is being dropped anyway.
    """
    if step is not None and not step.done():
        step.cancel()
        await asyncio.wait((step,))
        if not step.cancelled():
            step.exception()


DEFAULT_CAPACITY = 16
DEFAULT_MAX_AHEAD = 4
DEFAULT_TTL = 30.0
MAX_TEXTS = 1024
MAX_BUFFERED_BYTES = 4 * 1024 * 1024
"""Audio made and not yet read by the stream heard: about 95 s at 22.05 kHz; the synthesis
waits."""
MAX_RECORDED_BYTES = 24 * 1024 * 1024
"""A recording's whole audio, kept for later readers: about 9.5 min at 22.05 kHz; a turn
whose speech is longer is cut there."""
MAX_WRITTEN = 4096
"""Characters of a turn's written text kept to find it by (HA hands its stream ~60 first)."""
KEEP_ALIVE_SECONDS = 0.5
TRICKLE_SECONDS = 0.1
TRICKLE_EVERY = 0.5
"""While a primed reader's device has plenty to play, a little silence goes every half second:
the converter's output never stops (it sits on smaller pieces for seconds), and what the device
has queued still shrinks, so an answer that comes waits little behind it."""
"""Silence handed on at a time while the turn waits for a tool; also how close to its end
the audio handed on may play before more is handed."""
WAIT_POLL = 0.25
"""How often a reader waiting for audio looks whether the turn began to wait for a tool."""

type Synthesis = Callable[[AsyncIterator[str]], AsyncGenerator[AudioChunk]]
"""Speak sentences in one voice: the audio of each, in order, numbered from 0."""
type SentenceSource = Callable[[], AsyncIterator[str | SpeechGuess]]
"""Return the turn's sentences from the first, as the host takes them (a guess may come
before the first: the guess above)."""
type Waiting = Callable[[], bool]
"""Say whether the turn waits for a tool now (a pause in its speech is expected)."""


def _never() -> bool:
    """Say the turn never waits (a turn whose host does not say)."""
    return False


class _Recording:
    """One synthesis of a turn in one voice, kept whole so every reader hears it from its start.

    While nobody reads, or the first reader is ``limit`` bytes behind, the synthesis waits.
    """

    def __init__(self, voice: str, audio: AsyncGenerator[AudioChunk], limit: int) -> None:
        """Start recording ``audio``."""
        self.voice = voice
        self.readers = 0
        """Readers it was handed to (ever)."""
        self.reading = 0
        """Readers reading it now."""
        self.done = False
        self._limit = limit
        self._chunks: list[AudioChunk] = []
        self._recorded = 0
        self._read = 0  # bytes the first reader took
        self._changed = asyncio.Event()
        self._room = asyncio.Event()
        self._error: Exception | None = None
        self._task = asyncio.create_task(self._fill(audio), name=f"speech in {voice}")

    def stop(self) -> None:
        """Cancel the synthesis (its own ``finally`` closes its connection)."""
        self._task.cancel()

    def claim(self) -> None:
        """Note a reader it was handed to (it is no longer a synthesis nobody reads)."""
        self.readers += 1

    def attach(self) -> None:
        """Note a reader that begins reading."""
        self.reading += 1

    def detach(self, *, first: bool) -> None:
        """Note a reader that left; with nobody left reading, nobody hears the rest: stop."""
        self.reading -= 1
        if first:  # nobody holds the synthesis back any more
            self._read = MAX_RECORDED_BYTES
            self._room.set()
        if self.reading == 0 and not self.done:
            self.stop()

    def chunk(self, index: int, *, first: bool) -> AudioChunk | None:
        """Return chunk ``index`` if it was recorded; raise the synthesis's error at its end."""
        if index < len(self._chunks):
            chunk = self._chunks[index]
            if first:
                self._read += len(chunk.audio)
                self._room.set()
            return chunk
        if self.done and self._error is not None:
            raise self._error
        return None

    async def more(self, within: float | None) -> None:
        """Wait until something was recorded, or it ended (at most ``within`` seconds)."""
        changed = self._changed
        if within is None:
            await changed.wait()
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await changed.wait()

    async def _fill(self, audio: AsyncGenerator[AudioChunk]) -> None:
        """Record the synthesis, waiting for room; keep its error for the readers."""
        try:
            async for chunk in audio:
                if self._recorded + len(chunk.audio) > MAX_RECORDED_BYTES:
                    LOGGER.warning(
                        "A turn's speech is over %d bytes: not all spoken", MAX_RECORDED_BYTES
                    )
                    break
                self._chunks.append(chunk)
                self._recorded += len(chunk.audio)
                self._wake()
                while self._recorded - self._read >= self._limit:
                    self._room.clear()
                    await self._room.wait()
        except Exception as err:  # handed to the readers, which raise it
            self._error = err
        finally:
            self.done = True
            self._wake()
            await audio.aclose()

    def _wake(self) -> None:
        """Wake every reader waiting for more."""
        self._changed.set()
        self._changed = asyncio.Event()


@dataclass(frozen=True, slots=True)
class TurnAudio:
    """A reader's audio of a turn; ``primary``: the reader heard (timeline, subtitles, marks)."""

    primary: bool
    chunks: AsyncGenerator[AudioChunk]


class TurnSpeech:
    """A turn's sentences, its recordings by voice, and when its audio was handed on."""

    def __init__(
        self,
        trace_id: str,
        sentences: SentenceSource,
        *,
        limit: int = MAX_BUFFERED_BYTES,
        waiting: Waiting = _never,
    ) -> None:
        """Follow turn ``trace_id``, whose sentences ``sentences()`` yields; speak nothing yet."""
        self.trace_id = trace_id
        self.timeline = AudioTimeline()
        self.stopped = asyncio.Event()
        self.voice: str | None = None
        """The voice it is (or was last) heard in; None: no voice took it yet."""
        self.claimed = False
        """A stream has asked for its audio (the first is the one heard)."""
        self.texts: list[str] = []
        """The sentences read so far, in order: sentence ``n``'s audio speaks ``texts[n]``."""
        self.written = ""
        """The start of the text the turn wrote for its host, as the host wrote it out."""
        self._sentences = sentences
        self._limit = limit
        self._waiting = waiting
        self._recordings: dict[str, _Recording] = {}

    @property
    def ahead(self) -> bool:
        """Say whether it holds a synthesis made ahead that no stream read (yet)."""
        return any(r.readers == 0 for r in self._recordings.values())

    def wrote(self, text: str) -> None:
        """Note text the host wrote out for the turn (the start of it is kept, to find it by)."""
        if len(self.written) < MAX_WRITTEN:
            self.written = (self.written + text)[:MAX_WRITTEN]

    def start(self, voice: str, synthesis: Synthesis) -> bool:
        """Start speaking in ``voice`` ahead of the stream; False if spoken or started already."""
        if self._recordings or self.claimed or self.stopped.is_set():
            return False
        self.voice = voice
        self._recordings[voice] = _Recording(voice, self._spoken(synthesis), self._limit)
        return True

    def listen(self, voice: str, synthesis: Synthesis, *, prime: float = 0.0) -> TurnAudio:
        """Return the turn's audio in ``voice``: its recording if there is one, else a new one.

        The first listener is the one heard; every chunk it is handed is noted on the
        timeline. Each listener gets the audio from the start; it ends at once when the
        turn is stopped. ``prime``: the seconds of audio the listener's host holds back.
        """
        primary = not self.claimed
        self.claimed = True
        recording = self._recordings.get(voice)
        if recording is None and not self.stopped.is_set():
            for other in [r for r in self._recordings.values() if r.readers == 0]:
                other.stop()  # begun ahead in a voice nobody asked for
                del self._recordings[other.voice]
            recording = _Recording(voice, self._spoken(synthesis), self._limit)
            self._recordings[voice] = recording
        if recording is not None:
            recording.claim()
        if primary:
            self.timeline.reset()
            self.voice = voice
        chunks = self._read(recording, primary=primary, prime=prime)
        return TurnAudio(primary=primary, chunks=chunks)

    async def audio(self, voice: str, synthesis: Synthesis) -> AsyncGenerator[AudioChunk]:
        """Yield the turn's audio in ``voice`` (``listen``'s chunks)."""
        chunks = self.listen(voice, synthesis).chunks
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            await chunks.aclose()

    async def _read(
        self, recording: _Recording | None, *, primary: bool, prime: float = 0.0
    ) -> AsyncGenerator[AudioChunk]:
        """Yield one reader's audio, kept alive while the turn waits, until it is stopped."""
        if recording is None:  # stopped before anything was recorded
            return
        audio = self._reader(recording, primary=primary, prime=prime)
        try:
            async for chunk in until_stopped(audio, self.stopped):
                if primary:
                    self.timeline.handed(chunk, time.time())
                yield chunk
        finally:
            await audio.aclose()

    async def _reader(
        self, recording: _Recording, *, primary: bool, prime: float
    ) -> AsyncGenerator[AudioChunk]:
        """Yield the recording from its start; silence while it waits and the turn waits.

        Silence goes out when what was handed on would have all but played
        (``KEEP_ALIVE_SECONDS`` left, on this reader's own clock), never before the first
        audio (its format is the voice's); a primed reader first gets what it lacks of
        ``prime`` seconds, at once, then a trickle while it has much to play.
        """
        recording.attach()
        played = AudioTimeline()
        index = 0
        last: AudioChunk | None = None
        handed_at = 0.0
        try:
            while True:
                chunk = recording.chunk(index, first=primary)
                if chunk is None and recording.done:
                    return
                if chunk is not None:
                    index += 1
                elif last is not None and self._waiting():
                    now = time.monotonic()
                    left = (played.ends_at or 0.0) - now - KEEP_ALIVE_SECONDS
                    if played.seconds < prime:
                        chunk = _silence(last, prime - played.seconds)
                    elif left <= 0:
                        chunk = _silence(last, KEEP_ALIVE_SECONDS)
                    elif prime and now - handed_at >= TRICKLE_EVERY:
                        chunk = _silence(last, TRICKLE_SECONDS)
                    else:
                        wake = min(left, handed_at + TRICKLE_EVERY - now) if prime else left
                        await recording.more(wake)
                        continue
                else:
                    await recording.more(WAIT_POLL if last is not None else None)
                    continue
                last = chunk
                handed_at = time.monotonic()
                played.handed(chunk, handed_at)
                yield chunk
        finally:
            recording.detach(first=primary)

    def _spoken(self, synthesis: Synthesis) -> AsyncGenerator[AudioChunk]:
        """Return the turn's audio in one voice, from its first sentence (maybe on a guess)."""
        return guessed_audio(lambda run: synthesis(run.sentences(self._sentences(), self._note)))

    def _note(self, index: int, text: str) -> None:
        """Note sentence ``index``'s text the first time a synthesis takes it (bounded)."""
        if index == len(self.texts) and index < MAX_TEXTS:
            self.texts.append(text)

    def stop(self) -> None:
        """End the turn's audio now: every synthesis, and the streams reading them."""
        self.stopped.set()
        for recording in self._recordings.values():
            recording.stop()
        self.drop_ahead()

    def drop_ahead(self) -> None:
        """Stop a synthesis running ahead, if no stream read it."""
        for recording in [r for r in self._recordings.values() if r.readers == 0]:
            recording.stop()
            del self._recordings[recording.voice]


def _silence(like: AudioChunk, seconds: float) -> AudioChunk:
    """Return ``seconds`` of silence in ``like``'s format, as part of its sentence."""
    frames = int(like.rate * seconds)
    return AudioChunk(
        sentence=like.sentence,
        rate=like.rate,
        width=like.width,
        channels=like.channels,
        audio=bytes(frames * like.width * like.channels),
    )


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
        wanted = _folded(text)
        if not wanted:
            return None
        for trace_id in reversed(self._turns):
            if self._spoken.get(trace_id) == wanted:
                return self._turns[trace_id]
        return None

    def writing(self, text: str) -> TurnSpeech | None:
        """Return the newest running turn whose written text begins with ``text``; unread first.

        What HA hands a TTS stream first is the reply's text so far, as the agent wrote it;
        or, for a short reply it did not stream, the reply's speech once written, its lines
        joined by spaces: both are compared spacing aside. A turn that ended is found by its
        whole speech only (``spoken``).
        """
        wanted = _folded(text[:MAX_WRITTEN])
        if not wanted:
            return None
        found = [
            speech
            for trace_id, speech in reversed(self._turns.items())
            if trace_id not in self._spoken
            and not speech.stopped.is_set()
            and _begins(speech.written, wanted)
        ]
        unread = [speech for speech in found if not speech.claimed]
        return (unread or found)[0] if found else None

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
        self._spoken[trace_id] = _folded(spoken)
        loop = asyncio.get_running_loop()
        self._timers[trace_id] = loop.call_later(self._ttl, self._forget, trace_id)

    def close(self) -> None:
        """Stop every turn's speech and forget them all."""
        for trace_id in list(self._turns):
            speech = self._turns[trace_id]
            self._forget(trace_id)
            speech.stop()

    def _forget(self, trace_id: str) -> None:
        """Forget one turn; a synthesis of it that nobody read stops."""
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


def _folded(text: str) -> str:
    """Return ``text`` with every run of whitespace one space, and none at either end."""
    return " ".join(text.split())


def _begins(written: str, wanted: str) -> bool:
    """Say whether a turn's ``written`` text begins with ``wanted`` (folded), or as far as kept."""
    kept = _folded(written)
    full = len(written) >= MAX_WRITTEN  # only its start was kept
    return kept.startswith(wanted) or (full and wanted.startswith(kept))
