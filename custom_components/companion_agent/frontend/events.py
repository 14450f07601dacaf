"""What the card hears: typed events from turns, voices, confirmations and memory.

Each event is a frozen dataclass with a ``kind`` literal and whom it is for: the persona
(``persona_id``) and the person (``user_id``; None is the household). ``payload()`` is what
goes over the WebSocket: bounded text and names, never a prompt, never the audience itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..engine.engine import ConfirmationStatus, ConfirmationToken
from ..engine.events import ToolStatus, TurnOutcome
from ..engine.json_types import JSONObject, JSONValue

MAX_TEXT = 600
MAX_NAME = 64
MAX_TARGETS = 8

type Timing = Literal["audio", "written"]
"""When a sentence reached the card: as its audio played, or as it was written (no voice)."""


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """Return ``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted:
    """A persona began a turn (it is thinking)."""

    kind: Literal["turn_started"] = "turn_started"
    persona_id: str
    user_id: str | None
    trace_id: str
    recognised: str | None = None
    """The name of the person whose voice was recognised; None: typed, or not recognised."""

    def payload(self) -> JSONObject:
        """Return what the card receives: who was recognised (a name, never a voiceprint)."""
        return {"kind": self.kind, "trace_id": self.trace_id, "recognised": self.recognised}


@dataclass(frozen=True, slots=True, kw_only=True)
class SentenceSpoken:
    """One sentence of the answer, as it is heard (or written, when no voice of ours speaks)."""

    kind: Literal["sentence"] = "sentence"
    persona_id: str
    user_id: str | None
    trace_id: str
    text: str
    gestures: tuple[str, ...] = ()
    emotion: str | None = None
    timing: Timing = "written"

    def payload(self) -> JSONObject:
        """Return what the card receives."""
        return {
            "kind": self.kind,
            "trace_id": self.trace_id,
            "text": clip(self.text),
            "gestures": [clip(g, MAX_NAME) for g in self.gestures[:MAX_TARGETS]],
            "emotion": self.emotion,
            "timing": self.timing,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class EmotionShown:
    """The persona shows an emotion of its profile's vocabulary (with the sentence it tags)."""

    kind: Literal["emotion"] = "emotion"
    persona_id: str
    user_id: str | None
    trace_id: str
    emotion: str

    def payload(self) -> JSONObject:
        """Return what the card receives."""
        return {"kind": self.kind, "trace_id": self.trace_id, "emotion": clip(self.emotion, 32)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallShown:
    """A tool call of the turn: running, then how it ended (its arguments stay behind)."""

    kind: Literal["tool_call"] = "tool_call"
    persona_id: str
    user_id: str | None
    trace_id: str
    tool_id: str
    name: str
    status: ToolStatus

    def payload(self) -> JSONObject:
        """Return what the card receives."""
        return {
            "kind": self.kind,
            "trace_id": self.trace_id,
            "tool_id": clip(self.tool_id, MAX_NAME),
            "name": clip(self.name, MAX_NAME),
            "status": self.status,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnded:
    """The turn is over for the card: its last sentence was heard (or dropped), and how."""

    kind: Literal["turn_ended"] = "turn_ended"
    persona_id: str
    user_id: str | None
    trace_id: str
    outcome: TurnOutcome

    def payload(self) -> JSONObject:
        """Return what the card receives."""
        return {"kind": self.kind, "trace_id": self.trace_id, "outcome": self.outcome}


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationChanged:
    """A held action was asked for, or ended; only a request carries its token."""

    kind: Literal["confirmation"] = "confirmation"
    persona_id: str
    user_id: str | None
    status: ConfirmationStatus
    token: ConfirmationToken
    expires_at: float
    """Epoch seconds."""

    def payload(self) -> JSONObject:
        """Return what the card receives; while it waits, the token and who may approve."""
        data: JSONObject = {
            "kind": self.kind,
            "status": self.status,
            "id": self.token.ref,
            "trace_id": self.token.ctx.trace_id,
            "action": action_summary(self.token.action),
            "expires_at": round(self.expires_at, 1),
        }
        if self.status == "requested":
            data["token"] = self.token.token_id
            data["needs_adult"] = self.token.needs_voice
        return data


type CardEvent = (
    TurnStarted | SentenceSpoken | EmotionShown | ToolCallShown | TurnEnded | ConfirmationChanged
)


def action_summary(action: JSONObject) -> JSONObject:
    """Return what a held action's card shows: the tool and its targets, bounded."""
    targets: list[JSONValue] = []
    raw = action.get("targets")
    for target in raw[:MAX_TARGETS] if isinstance(raw, list) else []:
        if not isinstance(target, dict):
            continue
        shown: JSONObject = {}
        for key in ("entity_id", "name", "action", "domain"):
            value = target.get(key)
            if isinstance(value, str):
                shown[key] = clip(value, MAX_NAME * 2)
        targets.append(shown)
    tool = action.get("tool")
    return {"tool": clip(tool, MAX_NAME) if isinstance(tool, str) else "", "targets": targets}
