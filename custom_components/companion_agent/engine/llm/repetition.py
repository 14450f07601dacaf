"""A model that says the same thing again and again: noticed early, cheaply, deterministically.

Small models fall into loops: a sentence, a paragraph or a word repeated until the token
limit. The watch keeps the recent text (whitespace runs folded into one space) and asks
whether its end is periodic: the same unit of ``p`` characters repeated back to back.

- a unit of ``LONG_UNIT`` characters or more (a sentence, a paragraph) repeated twice in a
  row is a loop: nobody says the same long sentence twice running;
- a shorter unit must repeat three times and cover ``MIN_SPAN`` characters (``la la la`` …).

Non-adjacent repeats (A B A B) are periodic too, with the unit A B. The check runs every
``CHECK_EVERY`` characters over at most ``MAX_UNIT`` unit lengths: linear in the text.
"""

from __future__ import annotations

import re

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
