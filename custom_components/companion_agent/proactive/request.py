"""What a proactive chat is: who speaks, where, what to do, and what each device heard."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

DEFAULT_INSTRUCTION = "Start a short, friendly conversation with the person."
SATELLITE = "assist_satellite"
MEDIA_PLAYER = "media_player"
TARGET_DOMAINS = (SATELLITE, MEDIA_PLAYER)
SPEAKER_ENTITY = re.compile(rf"({'|'.join(TARGET_DOMAINS)})\.[a-z0-9_]+")
"""The entity id of something that can speak: an Assist satellite or a media player (what
trigger plugins may name as targets; handed to the engine as the host's rule)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """Where to speak, what to do, and who asked (``service`` or a trigger plugin's id)."""

    targets: tuple[str, ...]
    instruction: str
    source: str
    preannounce: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Chat:
    """What one target heard: the turn's trace id, its speech and how it ended."""

    target: str
    trace_id: str
    text: str
    outcome: str


def instruction_text(instruction: str | None, topic: str | None) -> str:
    """Return the instruction a turn runs from: the given one, a topic, or a friendly start.

    Control characters (but line breaks and tabs) become spaces: an automation may template
    in any text.
    """
    parts = [_plain(instruction or "")]
    if topic and (about := _plain(topic)):
        parts.append(f"Talk about: {about}")
    return "\n".join(part for part in parts if part) or DEFAULT_INSTRUCTION


def _plain(text: str) -> str:
    """Return ``text`` stripped, each control character but a line break or tab a space."""
    return "".join(
        " " if unicodedata.category(char) == "Cc" and char not in "\n\t" else char for char in text
    ).strip()
