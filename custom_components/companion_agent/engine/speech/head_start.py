"""Speech head starts: a turn's first sentence synthesised before the host asks for it.

A host whose agent and voice live together (HA's Assist pipeline opens its TTS stream only
after 60 characters of reply) can start the first sentence's synthesis the moment the
sentence exists. ``SpeechHeadStarts.start`` runs that synthesis into a buffer keyed by the
voice and the sentence's normalised speech text; the voice's stream, on its first sentence,
``claim``s it and plays the buffered audio (then the rest as it arrives) instead of
synthesising the sentence again. ``speak`` is that stream: a claimed head start, then the
remaining sentences, all ending at once when the turn is dropped.

Bounded: at most ``capacity`` unclaimed head starts (the oldest is cancelled to make room),
each cancelled if unclaimed after ``ttl`` seconds; one per key and turn (a second start is
refused: a turn never has one sentence synthesised twice ahead). Two turns may start the
same words (two speakers both answering "Sure."): a stream claims the newest, the likeliest
to be its own, and the words and voice are the same either way. ``drop_turn`` cancels a
turn's unclaimed head starts and stops the streams that claimed one of its head starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, replace

from .synthesizer import AudioChunk

DEFAULT_CAPACITY = 4
DEFAULT_TTL = 10.0

type Synthesis = Callable[[AsyncIterator[str]], AsyncGenerator[AudioChunk]]
type LengthListener = Callable[[str, float], None]
"""Told a turn's trace id and how many seconds of its audio a stream played to the end."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeechKey:
    """Which voice speaks which sentence: its speech text with whitespace collapsed."""

    voice: str
    text: str

    @classmethod
    def of(cls, voice: str, text: str) -> SpeechKey:
        """Return the key for ``text`` in ``voice``, whitespace normalised."""
        return cls(voice=voice, text=" ".join(text.split()))


class PreparedSpeech:
    """One sentence's synthesis running ahead: the chunks so far, then the rest as they come."""

    def __init__(self, key: SpeechKey, trace_id: str, audio: AsyncGenerator[AudioChunk]) -> None:
        """Start taking ``audio`` into the buffer at once."""
        self.key = key
        self.trace_id = trace_id
        self.stopped = asyncio.Event()
        self._chunks: list[AudioChunk] = []
        self._changed = asyncio.Event()
        self._done = False
        self._error: Exception | None = None
        self._task = asyncio.create_task(self._fill(audio), name=f"speech head start {trace_id}")

    async def audio(self) -> AsyncIterator[AudioChunk]:
        """Yield every chunk, those already here first; raise what the synthesis raised."""
        taken = 0
        while True:
            while taken < len(self._chunks):
                yield self._chunks[taken]
                taken += 1
            if self._done:
                if self._error is not None:
                    raise self._error
                return
            self._changed.clear()
            await self._changed.wait()

    def stop(self) -> None:
        """Cancel the synthesis and tell the stream playing it to end."""
        self._task.cancel()
        self.stopped.set()

    async def _fill(self, audio: AsyncGenerator[AudioChunk]) -> None:
        """Buffer the synthesis; keep its error for the stream that plays it."""
        try:
            async for chunk in audio:
                self._chunks.append(chunk)
                self._changed.set()
        except Exception as err:  # handed to the stream, which raises it
            self._error = err
        finally:
            self._done = True
            self._changed.set()
            await audio.aclose()


class SpeechHeadStarts:
    """The bounded set of head starts of one host, and the streams playing them."""

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY, ttl: float = DEFAULT_TTL) -> None:
        """Hold at most ``capacity`` unclaimed head starts, each for ``ttl`` seconds."""
        self._capacity = capacity
        self._ttl = ttl
        self._waiting: dict[tuple[SpeechKey, str], tuple[PreparedSpeech, asyncio.TimerHandle]] = {}
        self._playing: set[PreparedSpeech] = set()

    @property
    def waiting(self) -> int:
        """Return how many head starts wait to be claimed."""
        return len(self._waiting)

    @property
    def playing(self) -> int:
        """Return how many streams play a head start now."""
        return len(self._playing)

    def start(self, key: SpeechKey, trace_id: str, synthesis: Synthesis) -> bool:
        """Synthesise ``key.text`` ahead for turn ``trace_id``; False if the turn already did."""
        if not key.text or (key, trace_id) in self._waiting:
            return False
        while len(self._waiting) >= self._capacity:
            self._cancel(next(iter(self._waiting)))
        prepared = PreparedSpeech(key, trace_id, synthesis(_one(key.text)))
        timer = asyncio.get_running_loop().call_later(self._ttl, self._expire, prepared)
        self._waiting[key, trace_id] = (prepared, timer)
        return True

    def claim(self, key: SpeechKey) -> PreparedSpeech | None:
        """Take the newest head start for ``key``, if one waits; the caller must ``release`` it."""
        slot = next((slot for slot in reversed(self._waiting) if slot[0] == key), None)
        if slot is None:
            return None
        prepared, timer = self._waiting.pop(slot)
        timer.cancel()
        self._playing.add(prepared)
        return prepared

    def release(self, prepared: PreparedSpeech) -> None:
        """Forget a claimed head start once its stream has ended."""
        self._playing.discard(prepared)
        prepared.stop()

    def drop_turn(self, trace_id: str) -> None:
        """Cancel the turn's waiting head starts and stop the streams that play one."""
        for slot in [slot for slot in self._waiting if slot[1] == trace_id]:
            self._cancel(slot)
        for prepared in [p for p in self._playing if p.trace_id == trace_id]:
            prepared.stop()

    def close(self) -> None:
        """Cancel every head start and stop every stream playing one."""
        for slot in list(self._waiting):
            self._cancel(slot)
        for prepared in list(self._playing):
            prepared.stop()

    async def speak(
        self,
        voice: str,
        sentences: AsyncIterator[str],
        synthesis: Synthesis,
        on_length: LengthListener | None = None,
    ) -> AsyncGenerator[AudioChunk]:
        """Speak ``sentences``: the first from its head start if one waits, else as usual.

        A stream that played a turn's head start ends at once when that turn is dropped;
        one that played it to its end tells ``on_length`` the turn's id and audio seconds.
        """
        first = await anext(aiter(sentences), None)
        if first is None:
            return
        prepared = self.claim(SpeechKey.of(voice, first))
        if prepared is None:
            audio = synthesis(_prepend(first, sentences))
            try:
                async for chunk in audio:
                    yield chunk
            finally:
                await audio.aclose()
            return
        seconds = 0.0
        try:
            async for chunk in until_stopped(
                _then(prepared.audio(), lambda: synthesis(sentences)), prepared.stopped
            ):
                seconds += chunk_seconds(chunk)
                yield chunk
            if on_length is not None and not prepared.stopped.is_set():
                on_length(prepared.trace_id, seconds)
        finally:
            self.release(prepared)

    def _expire(self, prepared: PreparedSpeech) -> None:
        """Cancel a head start nobody claimed in time."""
        slot = (prepared.key, prepared.trace_id)
        if self._waiting.get(slot, (None,))[0] is prepared:
            self._cancel(slot)

    def _cancel(self, slot: tuple[SpeechKey, str]) -> None:
        """Cancel and forget one waiting head start."""
        prepared, timer = self._waiting.pop(slot)
        timer.cancel()
        prepared.stop()


def chunk_seconds(chunk: AudioChunk) -> float:
    """Return how long ``chunk`` plays."""
    per_second = chunk.rate * chunk.width * chunk.channels
    return len(chunk.audio) / per_second if per_second > 0 else 0.0


async def until_stopped(
    audio: AsyncGenerator[AudioChunk], stopped: asyncio.Event
) -> AsyncGenerator[AudioChunk]:
    """Yield ``audio`` until ``stopped`` is set, then close it at once (mid-chunk if need be)."""
    stop = asyncio.create_task(stopped.wait())
    step: asyncio.Task[AudioChunk | None] | None = None
    try:
        while not stopped.is_set():
            step = asyncio.create_task(_next(audio))
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
        if step is not None and not step.done():
            step.cancel()  # the audio's own finally closes its socket
            await asyncio.wait((step,))
            if not step.cancelled():
                step.exception()  # seen: the stream is ending anyway
        await audio.aclose()


async def _next(audio: AsyncGenerator[AudioChunk]) -> AudioChunk | None:
    """Return the next chunk, or None at the end."""
    return await anext(audio, None)


async def _then(
    first: AsyncIterator[AudioChunk], rest: Callable[[], AsyncGenerator[AudioChunk]]
) -> AsyncGenerator[AudioChunk]:
    """Yield ``first``'s chunks, then those of ``rest()`` numbered on after ``first``'s."""
    count = 0
    async for chunk in first:
        count = max(count, chunk.sentence + 1)
        yield chunk
    audio = rest()
    try:
        async for chunk in audio:
            yield replace(chunk, sentence=chunk.sentence + count) if count else chunk
    finally:
        await audio.aclose()


async def _one(text: str) -> AsyncIterator[str]:
    """Yield one sentence."""
    yield text


async def _prepend(first: str, rest: AsyncIterator[str]) -> AsyncIterator[str]:
    """Yield ``first``, then ``rest``."""
    yield first
    async for sentence in rest:
        yield sentence
