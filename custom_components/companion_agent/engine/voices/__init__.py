"""Voices: who speaks a turn, the speaker encoder, and the enrolled voiceprints."""

from .encoder import EMBEDDING_DIM, SAMPLE_RATE, Embedding, SpeakerEncoder
from .speaker import HOUSEHOLD_VOICE, Role, Speaker
from .voiceprints import (
    APPROVE_THRESHOLD,
    IDENTIFY_THRESHOLD,
    MARGIN,
    EnrolledVoice,
    Identification,
    VoiceprintStore,
    speaker_for,
)

__all__ = [
    "APPROVE_THRESHOLD",
    "EMBEDDING_DIM",
    "HOUSEHOLD_VOICE",
    "IDENTIFY_THRESHOLD",
    "MARGIN",
    "SAMPLE_RATE",
    "Embedding",
    "EnrolledVoice",
    "Identification",
    "Role",
    "Speaker",
    "SpeakerEncoder",
    "VoiceprintStore",
    "speaker_for",
]
