"""Speaking first: mood, quiet hours, presence and rate limits, and what the host must supply."""

from .host import Presence, PresenceProbe, StateChange, StateListener, StateWatcher
from .speaking_first import (
    Decision,
    MoodScore,
    ProactivePolicy,
    QuietHours,
    QuietHoursError,
    SpeakingLimit,
    bad_speaker,
    valence,
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
