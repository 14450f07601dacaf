"""What goes back to the model: normalised, bounded results and short structured errors."""

from __future__ import annotations

import json
import re

from ..chars import clean_text, cut_text, valid_text
from ..json_types import JSONObject, JSONValue
from ..redaction import scrub_text
from .contract import ToolFailure

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
