"""How long spoken text lasts, and how much of it a person could have heard by a given time.

Without the audio's real length, speech is estimated at a calm rate: ``SECONDS_PER_CHAR``
for letters, ``SECONDS_PER_CJK`` for Chinese/Japanese/Korean characters (``chars.is_wide``;
15 characters or 4 CJK characters a second). Real voices speak faster than that, up to twice as fast
(``FASTEST_RATE``), so an answer counts as cut short only when the time it had is shorter
than even the fastest voice needs; with the exact length, when it had ``EXACT_MARGIN``
seconds less than that. Each sentence that could have begun by then counts as heard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..chars import is_wide

SECONDS_PER_CHAR = 1 / 15
SECONDS_PER_CJK = 0.25
FASTEST_RATE = 2.0
EXACT_MARGIN = 0.5


def spoken_seconds(text: str) -> float:
    """Estimate how long ``text`` takes to say, at a calm speaking rate."""
    cjk = sum(1 for char in text if is_wide(char))
    return cjk * SECONDS_PER_CJK + (len(text) - cjk) * SECONDS_PER_CHAR


def heard_sentences(sentences: Sequence[str], elapsed: float, length: float | None) -> int | None:
    """Return how many sentences could have begun within ``elapsed`` seconds of audio.

    ``length`` is the audio's exact length when known. Return None when all of the audio
    could have played by then (the answer was heard to its end, as far as anyone can tell).
    """
    estimates = [spoken_seconds(sentence) for sentence in sentences]
    total = sum(estimates)
    if total <= 0:
        return None
    if length is not None:
        if elapsed >= length - EXACT_MARGIN:
            return None
        scale = length / total
    else:
        scale = 1 / FASTEST_RATE
        if elapsed >= total * scale:
            return None
    begun, start = 0, 0.0
    for estimate in estimates:
        if start > elapsed:
            break
        begun += 1
        start += estimate * scale
    return begun


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioProgress:
    """How far an answer's audio got on a device that knows it (the companion's satellite).

    ``played``: seconds the person has heard; ``length``: seconds made so far (all of it
    once ``complete``); ``starts``: where each sentence begins, when the voice marked them.
    """

    played: float
    length: float | None = None
    complete: bool = False
    starts: tuple[float, ...] = ()


def sentences_heard(sentences: Sequence[str], progress: AudioProgress) -> int | None:
    """Return how many sentences began within the seconds played; None: all were heard.

    With the voice's marks the count is exact; without, it is estimated from the
    sentences' lengths (scaled to the audio's length once all of it was made).
    """
    if progress.played <= 0:
        return 0
    length = progress.length if progress.complete else None
    if length is not None and progress.played >= length - EXACT_MARGIN:
        return None
    if progress.starts:
        return sum(1 for start in progress.starts if start <= progress.played)
    return heard_sentences(sentences, progress.played, length)
