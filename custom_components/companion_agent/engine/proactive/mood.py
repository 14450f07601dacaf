"""``MoodScore``: how the persona feels, from the emotions it showed and how its turns ended.

A score in [-1, 1]; each event nudges it and it decays towards 0 (neutral) with a half-life,
so one bad turn last week does not keep the companion quiet today. Tags it does not know
(actions such as ``wave``) leave it as it is.
"""

from __future__ import annotations

import math
from datetime import datetime

from ..events import TurnOutcome

DEFAULT_HALF_LIFE = 6 * 3600.0
EMOTION_WEIGHT = 0.25
VALENCE: dict[str, float] = {
    "joy": 1.0,
    "happy": 1.0,
    "love": 1.0,
    "excited": 0.8,
    "proud": 0.6,
    "surprise": 0.2,
    "surprised": 0.2,
    "calm": 0.2,
    "shy": 0.0,
    "think": 0.0,
    "neutral": 0.0,
    "confused": -0.3,
    "tired": -0.5,
    "worried": -0.6,
    "fear": -0.8,
    "sad": -1.0,
    "angry": -1.0,
}
OUTCOME_NUDGE: dict[TurnOutcome, float] = {
    "complete": 0.05,
    "cut": -0.1,
    "interrupted": -0.1,
    "failed": -0.15,
    "timed_out": -0.15,
}


def valence(emotion: str) -> float:
    """Return how pleasant an emotion tag is, from -1 to 1 (unknown: 0)."""
    return VALENCE.get(emotion.strip().lower(), 0.0)


class MoodScore:
    """A bounded, decaying score of recent emotions and turn outcomes."""

    def __init__(self, *, half_life: float = DEFAULT_HALF_LIFE) -> None:
        """Start neutral; the score halves every ``half_life`` seconds without news."""
        if half_life <= 0:
            raise ValueError("half_life must be positive")
        self._half_life = half_life
        self._score = 0.0
        self._at: datetime | None = None

    def value(self, now: datetime) -> float:
        """Return the score at ``now``, decayed since the last event."""
        if self._at is None:
            return 0.0
        elapsed = max(0.0, (now - self._at).total_seconds())
        return self._score * math.pow(0.5, elapsed / self._half_life)

    def record(
        self, now: datetime, *, emotions: tuple[str, ...] = (), outcome: TurnOutcome | None = None
    ) -> float:
        """Add one turn's emotions and outcome; return the new score."""
        score = self.value(now)
        for emotion in emotions:
            if emotion.strip().lower() in VALENCE:
                score += EMOTION_WEIGHT * (valence(emotion) - score)  # towards the emotion
        if outcome is not None:
            score += OUTCOME_NUDGE[outcome]
        self._score = max(-1.0, min(1.0, score))
        self._at = now
        return self._score
