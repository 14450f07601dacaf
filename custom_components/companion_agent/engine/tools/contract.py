"""Tool contracts, the outcomes of tool calls, and what of them goes back to the model.

A tool's return value goes back as bounded model text (``normalise_result``: JSON, no
control characters, at most ``DEFAULT_MAX_RESULT_CHARS``, or cut inside JSON that says
so); an error as a short, structured ``ToolFailure`` (``failure``: its category, its
message scrubbed of secrets and at most ``MAX_ERROR_MESSAGE_CHARS``, whether a retry may
help).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from ..chars import clean_text, cut_text, valid_text
from ..json_types import JSONObject, JSONValue
from ..messages import ImagePart
from ..redaction import scrub_text


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


# What goes back to the model: bounded results and short structured errors.
DEFAULT_MAX_RESULT_CHARS = 4000
MAX_ERROR_MESSAGE_CHARS = 300

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def failure(category: str, message: str, *, retryable: bool = False) -> ToolFailure:
    """Build the short, structured error the model receives."""
    text = clean_text(scrub_text(message), MAX_ERROR_MESSAGE_CHARS, marker="…")
    content = json.dumps(
        {"error": category, "message": text, "retryable": retryable}, ensure_ascii=False
    )
    return ToolFailure(content=content, category=category, retryable=retryable)


def normalise_result(value: object, max_chars: int = DEFAULT_MAX_RESULT_CHARS) -> str:
    """Turn a tool's return value into bounded model text: JSON, no control characters."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
        except ValueError:
            text = json.dumps(str(value), ensure_ascii=False)
    text = _CONTROL.sub("", valid_text(text))
    if len(text) <= max_chars:
        return text
    return truncate(text, max_chars)


def truncate(text: str, max_chars: int) -> str:
    """Cut text to a bound, wrapped in JSON that says it was cut and how long it was."""
    budget = max(max_chars - 80, 0)
    cut = cut_text(text, budget)
    while True:
        wrapped = json.dumps(
            {"truncated": True, "original_chars": len(text), "partial": cut}, ensure_ascii=False
        )
        if len(wrapped) <= max_chars or not cut:
            return wrapped
        cut = cut_text(cut, max(len(cut) - (len(wrapped) - max_chars) - 1, 0))


def json_or_text(text: str) -> JSONValue:
    """Return text as the JSON value it holds, or as the text itself when it is not JSON."""
    try:
        value: JSONValue = json.loads(text)
    except ValueError:
        return text
    return value


def compact_json(body: JSONObject) -> str:
    """Serialise model-facing content compactly."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
