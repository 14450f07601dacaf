"""Tool contracts and the outcomes of tool calls."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from ..json_types import JSONObject, JSONValue
from ..messages import ImagePart


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """Who is asking, where, and under which trace id."""

    conversation_id: str
    user_id: str | None = None
    trace_id: str = ""
    language: str = "en"
    agent_id: str = "default"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolImages:
    """What a tool returns when it took images: its value, and the images for the model.

    The images reach the model's next round only; the value is all that is kept.
    """

    value: JSONValue
    images: tuple[ImagePart, ...]


type ToolHandler = Callable[[JSONObject, ToolContext], Awaitable[JSONValue | ToolImages]]

type Policy = Literal["allow", "validate", "confirm"]
"""How the guard treats a call: run it, check state first, or wait for the person."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """What the model is told about a tool: name, description, input JSON Schema."""

    name: str
    description: str
    parameters: JSONObject = field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": False}
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSuccess:
    """The tool ran; ``content`` is the normalised text returned to the model.

    ``images`` go to the model with the result, and nowhere else (never stored or audited).
    """

    kind: Literal["success"] = "success"
    content: str
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFailure:
    """The tool did not produce a result; ``content`` is the structured error for the model."""

    kind: Literal["failure"] = "failure"
    content: str
    category: str
    retryable: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPending:
    """The call waits for the person's confirmation; it was not executed."""

    kind: Literal["pending"] = "pending"
    content: str
    token_id: str


type ToolOutcome = ToolSuccess | ToolFailure | ToolPending


def canonical_arguments(args: JSONObject) -> str:
    """Return the canonical JSON text of arguments: sorted keys, no spaces."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def argument_problem(raw: str) -> str:
    """Say briefly why arguments are not a JSON object (for the model: what to fix)."""
    try:
        value = json.loads(raw)
    except ValueError as err:
        reason = err.msg if isinstance(err, json.JSONDecodeError) else "not JSON"
        where = f" at character {err.pos}" if isinstance(err, json.JSONDecodeError) else ""
        return f"invalid JSON: {reason}{where}"
    return f"a JSON {type(value).__name__.replace('dict', 'object')}, not an object"


def parse_arguments(raw: str) -> JSONObject | None:
    """Parse a tool call's JSON arguments; None when they are not a JSON object."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
