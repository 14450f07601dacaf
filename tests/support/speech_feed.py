"""A turn's sentences as its host takes them, for a ``TurnSpeech`` under test.

``Feed`` follows the rules of ``Turn.guessed_speech()``: any number of readers, each from
the first sentence, ending when the turn ends or at once when it is stopped; before the
first sentence, each newer guess of it (``SpeechGuess``) once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from custom_components.companion_agent.engine.speech.turn_speech import SpeechGuess


class Feed:
    """A turn's sentences: ``guess``, ``add``, then ``end``."""

    def __init__(self, *sentences: str) -> None:
        """Start with ``sentences`` taken already."""
        self.sentences = list(sentences)
        self.over = False
        self.guesses: list[str] = []
        self._changed = asyncio.Event()

    def guess(self, text: str) -> None:
        """Guess the first sentence (ignored once one was taken, as the turn does)."""
        if not self.sentences:
            self.guesses.append(text)
            self._changed.set()

    def add(self, sentence: str) -> None:
        """Take one more sentence."""
        self.sentences.append(sentence)
        self._changed.set()

    def end(self) -> None:
        """End the turn: no more sentences."""
        self.over = True
        self._changed.set()

    async def read(self) -> AsyncIterator[str | SpeechGuess]:
        """Yield every sentence from the first, as they come, until the turn ends."""
        taken = guessed = 0
        while True:
            if taken < len(self.sentences):
                yield self.sentences[taken]
                taken += 1
            elif self.over:
                return
            elif taken == 0 and len(self.guesses) > guessed:
                guessed = len(self.guesses)
                yield SpeechGuess(self.guesses[-1])
            else:
                self._changed.clear()
                await self._changed.wait()
