"""Speaking first: mood, quiet hours, presence and rate limits, and what the host must supply."""

from .host import Presence, PresenceProbe, StateChange, StateListener, StateWatcher
from .mood import MoodScore, valence
from .policy import (
    Decision,
    ProactivePolicy,
    QuietHours,
    QuietHoursError,
    SpeakingLimit,
    bad_speaker,
)

__all__ = [
    "Decision",
    "MoodScore",
    "Presence",
    "PresenceProbe",
    "ProactivePolicy",
    "QuietHours",
    "QuietHoursError",
    "SpeakingLimit",
    "StateChange",
    "StateListener",
    "StateWatcher",
    "bad_speaker",
    "valence",
]
