"""Repetition watches: a model saying the same thing again and again, noticed early and cheaply.

Small models fall into loops: a sentence, a paragraph or a word repeated until the token
limit. The watch keeps the recent text (whitespace runs folded into one space) and asks
whether its end is periodic: the same unit of ``p`` characters repeated back to back.

- a unit of ``LONG_UNIT`` characters or more (a sentence, a paragraph) repeated twice in a
  row is a loop: nobody says the same long sentence twice running;
- a shorter unit must repeat three times and cover ``MIN_SPAN`` characters (``la la la`` …).

Non-adjacent repeats (A B A B) are periodic too, with the unit A B. The check runs every
``CHECK_EVERY`` characters over at most ``MAX_UNIT`` unit lengths: linear in the text.

A loop of sentences that differ a little ("You can turn on the light again. You can turn
on the light again now.") is no period: ``SentenceRepeats`` compares whole sentences by
their character n-grams instead (the turn's reply check feeds it, ``turn/reply_check.py``).
"""

from __future__ import annotations

import re

from ..chars import is_wide

MAX_UNIT = 400
LONG_UNIT = 40
MIN_SPAN = 60
CHECK_EVERY = 16
_SPACES = re.compile(r"\s+")


class RepetitionWatch:
    """Feed text as it streams; ``looping`` turns True once its end repeats itself."""

    __slots__ = ("_since", "_tail", "looping", "unit")

    def __init__(self) -> None:
        """Start with no text."""
        self._tail = ""
        self._since = 0
        self.looping = False
        self.unit = 0
        """The length of the repeated unit, once looping."""

    def feed(self, text: str) -> bool:
        """Add text; return True when the text so far ends in a loop."""
        if self.looping or not text:
            return self.looping
        folded = _SPACES.sub(" ", text)
        if self._tail.endswith(" ") and folded.startswith(" "):
            folded = folded[1:]
        self._tail = (self._tail + folded)[-3 * MAX_UNIT :]
        self._since += len(folded)
        if self._since >= CHECK_EVERY:
            self._since = 0
            self.unit = _period(self._tail)
            self.looping = self.unit > 0
        return self.looping


def _period(text: str) -> int:
    """Return the shortest unit whose repeats make up the end of ``text``, or 0.

    Only units where the text's last two characters occur again are tried (found with
    ``rfind``), so a check costs a few string searches, not a loop over every length.
    """
    if len(text) < MIN_SPAN:
        return 0
    end, last = len(text), text[-2:]
    lowest = max(0, end - MAX_UNIT - 2)
    at = text.rfind(last, lowest, end - 1)
    while at >= 0:
        unit = end - 2 - at
        span = 2 * unit if unit >= LONG_UNIT else max(3 * unit, MIN_SPAN)
        if span <= end and text[-8:] == text[-8 - unit : -unit]:
            window = text[-span:]
            if window[unit:] == window[:-unit] and window.strip():
                return unit
        at = text.rfind(last, lowest, at + 1)  # the next longer unit
    return 0


SIMILAR = 0.6
"""Sentences whose character n-grams (``grams``) overlap this much (Jaccard) say the same thing."""
NEAR_REPEATS = 3
"""The near-identical sentence that ends a reply: the third of a kind …"""
LONG_SENTENCE = 60
"""… or the second, when it has this many letters and digits (nobody says that twice)."""
MAX_KEPT = 16
"""Earlier sentences each new one is compared with (the most recent): linear in the reply."""
_NOT_WORD = re.compile(r"[\W_]+")


def grams(sentence: str) -> frozenset[str]:
    """Return the character n-grams of ``sentence``, folded, words joined by one space.

    Trigrams; bigrams in CJK text, where a character is about a syllable.
    """
    text = " ".join(_NOT_WORD.sub(" ", sentence.casefold()).split())
    size = 2 if any(is_wide(char) for char in text) else 3
    if len(text) < size:
        return frozenset((text,)) if text else frozenset()
    return frozenset(text[at : at + size] for at in range(len(text) - size + 1))


def similarity(one: frozenset[str], other: frozenset[str]) -> float:
    """Return how alike two sentences' n-grams are: shared over all (0 to 1)."""
    if not one or not other:
        return 0.0
    return len(one & other) / len(one | other)


class SentenceRepeats:
    """Feed a reply's sentences; ``feed`` says when one repeats what was said, nearly.

    Exact loops are ``RepetitionWatch``'s; this catches the near-identical sentences a
    small model rambles in ("You can turn on the light again. You can turn on the light
    again now. You can turn on the lights again."): a sentence as alike as ``SIMILAR`` to
    ``NEAR_REPEATS - 1`` earlier ones, or to one earlier when ``LONG_SENTENCE`` long.
    Deterministic; each sentence costs at most ``MAX_KEPT`` set comparisons.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        """Start with no sentences."""
        self._kept: list[frozenset[str]] = []

    def feed(self, sentence: str) -> bool:
        """Add a sentence; return True when it repeats earlier ones (see the class)."""
        said = grams(sentence)
        if not said:
            return False
        alike = sum(1 for earlier in self._kept if similarity(said, earlier) >= SIMILAR)
        self._kept = [*self._kept[-(MAX_KEPT - 1) :], said]
        letters = len(_NOT_WORD.sub("", sentence))
        return alike >= NEAR_REPEATS - 1 or (alike >= 1 and letters >= LONG_SENTENCE)
