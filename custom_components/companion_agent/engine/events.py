"""Typed items that flow out of a turn and through the output pipeline.

Every item is a frozen dataclass with a ``kind`` literal; stages dispatch on it with
``match``. Text tokens are plain ``str``; nothing structural ever travels inside text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .json_types import JSONObject

type ToolStatus = Literal["running", "completed", "error", "pending_confirmation"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEvent:
    """A tool call's progress: ``running`` first, then one final status."""

    kind: Literal["tool_call"] = "tool_call"
    tool_id: str
    tool_name: str
    args: JSONObject
    status: ToolStatus
    result: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    """Reasoning text from the model: shown only if configured, never spoken."""

    kind: Literal["thinking"] = "thinking"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SentenceOutput:
    """One finished sentence: what a person reads, what TTS speaks, and its actions."""

    kind: Literal["sentence"] = "sentence"
    display_text: str
    tts_text: str
    actions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnResult:
    """What a finished turn produced, for storage and hooks."""

    kind: Literal["turn_result"] = "turn_result"
    text: str
    tool_calls: tuple[ToolCallEvent, ...] = ()
    rounds: int = 0
    usage: dict[str, int] = field(default_factory=dict)


type StructuredEvent = ToolCallEvent | ThinkingDelta | TurnResult
type TurnItem = str | StructuredEvent
type OutputItem = SentenceOutput | StructuredEvent
