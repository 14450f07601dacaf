"""Whether the companion may speak first now (``ProactivePolicy``), and its mood (``MoodScore``).

It may speak when it is outside the quiet hours, someone is home and awake, its mood is not
low, and it has not spoken too often (per hour and per day). A happier mood makes it look
for a chance more often: the check interval is ``base × 2^-mood`` (half at +1, double at -1).

**Mood**: how the persona feels, from the emotions it showed and how its turns ended. A
score in [-1, 1]; each event nudges it and it decays towards 0 (neutral) with a half-life,
so one bad turn last week does not keep the companion quiet today. Tags it does not know
(actions such as ``wave``) leave it as it is.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Literal, Self

from ..events import TurnOutcome
from .host import Presence

type HoldReason = Literal["quiet hours", "nobody home", "asleep", "low mood", "rate limit"]


class QuietHoursError(ValueError):
    """One end of the quiet hours is not a time of day; ``end`` says which."""

    def __init__(self, end: Literal["start", "end"], message: str) -> None:
        """Keep which end was wrong, and why."""
        super().__init__(message)
        self.end = end


def bad_speaker(targets: Sequence[str], speakers: re.Pattern[str] | None) -> str | None:
    """Return the first target that is not the id of a device that can speak, if any.

    ``speakers`` is what the host's speaker ids look like (``PluginContext.speakers``);
    None accepts any id.
    """
    if speakers is None:
        return None
    return next((target for target in targets if not speakers.fullmatch(target)), None)


def parse_clock(text: str) -> time:
    """Return a wall-clock time from ``HH:MM``; raise ValueError otherwise."""
    hours, sep, minutes = text.strip().partition(":")
    if not sep or not hours.isdigit() or not minutes.isdigit() or len(minutes) != 2:
        raise ValueError(f"{text!r} is not a time of day as HH:MM")
    if int(hours) > 23 or int(minutes) > 59:
        raise ValueError(f"{text!r} is not a time of day as HH:MM (00:00 to 23:59)")
    return time(int(hours), int(minutes))


@dataclass(frozen=True, slots=True, kw_only=True)
class QuietHours:
    """A daily span of silence, ``start`` up to ``end``; it may run across midnight."""

    start: time | None = None
    end: time | None = None

    @classmethod
    def parse(cls, start: str, end: str) -> Self:
        """Return quiet hours from two ``HH:MM`` texts; two empty texts mean none.

        Raise ``QuietHoursError`` naming the end that is wrong (or missing).
        """
        if not start.strip() and not end.strip():
            return cls()
        ends: tuple[tuple[Literal["start", "end"], str], ...] = (("start", start), ("end", end))
        times: list[time] = []
        for which, text in ends:
            if not text.strip():
                raise QuietHoursError(which, "set both ends of the quiet hours, or neither")
            try:
                times.append(parse_clock(text))
            except ValueError as err:
                raise QuietHoursError(which, str(err)) from err
        return cls(start=times[0], end=times[1])

    def contains(self, moment: datetime) -> bool:
        """Return whether ``moment`` (in the home's time zone) falls in the quiet hours."""
        if self.start is None or self.end is None or self.start == self.end:
            return False
        now = moment.time().replace(tzinfo=None)
        if self.start < self.end:
            return self.start <= now < self.end
        return now >= self.start or now < self.end


class SpeakingLimit:
    """At most ``per_hour`` and ``per_day`` proactive turns, over sliding windows."""

    def __init__(self, *, per_hour: int, per_day: int) -> None:
        """Allow that many; 0 forbids all; the memory holds at most ``per_day`` times."""
        if per_hour < 0 or per_day < 0:
            raise ValueError("limits cannot be negative")
        self.per_hour = per_hour
        self.per_day = per_day
        self._times: deque[datetime] = deque(maxlen=max(per_day, 1))

    def allows(self, now: datetime) -> bool:
        """Return whether one more turn now stays within both limits."""
        day = [t for t in self._times if now - t < timedelta(days=1)]
        hour = [t for t in day if now - t < timedelta(hours=1)]
        return len(day) < self.per_day and len(hour) < self.per_hour

    def note(self, now: datetime) -> None:
        """Count one proactive turn at ``now``."""
        self._times.append(now)


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """The policy's answer: speak, or hold for a reason."""

    speak: bool
    reason: HoldReason | None = None

    @classmethod
    def go(cls) -> Self:
        """Return a decision to speak."""
        return cls(speak=True)

    @classmethod
    def hold(cls, reason: HoldReason) -> Self:
        """Return a decision to stay quiet, and why."""
        return cls(speak=False, reason=reason)


class ProactivePolicy:
    """Decide when the companion speaks first, from the hour, the home and its mood."""

    def __init__(
        self,
        *,
        quiet: QuietHours,
        limit: SpeakingLimit,
        quiet_below: float = -0.3,
        base_interval: float = 3600.0,
    ) -> None:
        """Stay quiet in ``quiet`` hours, within ``limit``, and at a mood below ``quiet_below``."""
        if base_interval <= 0:
            raise ValueError("base_interval must be positive")
        self.quiet = quiet
        self.limit = limit
        self.quiet_below = quiet_below
        self.base_interval = base_interval

    def interval(self, mood: float) -> float:
        """Return the seconds until the next look: shorter when happy, longer when low."""
        return self.base_interval * math.pow(2.0, -max(-1.0, min(1.0, mood)))

    def decide(self, now: datetime, *, mood: float, presence: Presence | None) -> Decision:
        """Return whether to speak at ``now`` (home's time zone); None presence is unknown."""
        if self.quiet.contains(now):
            return Decision.hold("quiet hours")
        if presence is not None and not presence.someone_home:
            return Decision.hold("nobody home")
        if presence is not None and presence.asleep:
            return Decision.hold("asleep")
        if mood < self.quiet_below:
            return Decision.hold("low mood")
        if not self.limit.allows(now):
            return Decision.hold("rate limit")
        return Decision.go()

    def spoke(self, now: datetime) -> None:
        """Count a proactive turn that was started at ``now``."""
        self.limit.note(now)


# Mood: a bounded, decaying score of recent emotions and turn outcomes.
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
