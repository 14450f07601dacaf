"""A turn's first sentence spoken on a guess: begun before the next token decides it, heard
only once it is decided.

A turn's speech source may yield a ``SpeechGuess`` before its first sentence: the speech
the first sentence will have if the text so far ends it (``pipeline/first_guess.py``).
``guessed_audio`` then hands the voice the guess as sentence 0 at once, and holds that
sentence's audio until the real first sentence comes. The same text (spacing aside): the
audio goes on, one token's wait earlier than it could have begun. Other text, or a newer
guess (the text went on without ending): the held audio is dropped unheard, the synthesis
closed, and the voice asked again from the real first sentence. A voice makes audio far
slower than a token comes, so the wait for the decision is almost never heard; after
``MAX_WRONG`` wrong guesses a turn is spoken without guessing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass

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
