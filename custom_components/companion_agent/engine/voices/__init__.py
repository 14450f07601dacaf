"""Voices: who speaks a turn, the speaker encoder, and the enrolled voiceprints."""

from .speaker import HOUSEHOLD_VOICE, Role, Speaker

__all__ = ["HOUSEHOLD_VOICE", "Role", "Speaker"]
