"""One streamed chunk as the server sent it, read tolerantly into the parts a round is made of.

Every vendor's chunk shape is read here, from the chunk's raw JSON, never from SDK typed
fields (they differ between SDK versions and drop what they do not know):

- reasoning in ``reasoning_content`` (DeepSeek, llama.cpp, vLLM before 0.11.1, LM Studio) or
  ``reasoning`` (Ollama, vLLM from 0.11.1, LM Studio for gpt-oss, OpenRouter); a server that
  sends both with the same text is read once;
- content as a string, or as a list of parts where ``thinking`` parts are reasoning;
- tool-call fragments with or without ``index`` or ``id``, ids as numbers, ``arguments`` as a
  string or as a JSON object, the legacy ``function_call``;
- ``finish_reason`` in any spelling (``function_call``, ``eos_token``…) or none at all;
- usage on the last chunk (``choices: []``), on every chunk, or under ``x_groq``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from ..json_types import JSONObject, JSONValue

REASONING_FIELDS = ("reasoning_content", "reasoning")
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter"})
_FINISH_ALIASES = {"function_call": "tool_calls", "tool_use": "tool_calls", "max_tokens": "length"}
_THINKING_PARTS = frozenset({"thinking", "reasoning"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFragment:
    """A piece of one streamed tool call; ``arguments`` is always text."""

    index: int | None
    call_id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeltaParts:
    """What one choice of one chunk carries."""

    reasoning: str = ""
    content: str = ""
    tool_calls: tuple[ToolFragment, ...] = ()
    finish_reason: str | None = None


def deltas_of(chunk: JSONObject) -> Iterator[DeltaParts]:
    """Yield the parts of every choice of a chunk (usually one; none in a usage chunk)."""
    choices = chunk.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            message = choice.get("message")  # a server that sends whole messages in a stream
            delta = message if isinstance(message, dict) else {}
        reasoning, content = _texts(delta)
        yield DeltaParts(
            reasoning=reasoning,
            content=content,
            tool_calls=tuple(_fragments(delta)),
            finish_reason=finish_reason_of(choice.get("finish_reason")),
        )


def finish_reason_of(value: JSONValue) -> str | None:
    """Return a finish reason in OpenAI's words; unknown words mean the model stopped."""
    if not isinstance(value, str) or not value:
        return None
    value = _FINISH_ALIASES.get(value, value)
    return value if value in FINISH_REASONS else "stop"


def usage_of(chunk: JSONObject) -> dict[str, int]:
    """Return the token counts a chunk carries (only whole numbers), if any."""
    usage = chunk.get("usage")
    groq = chunk.get("x_groq")
    if not isinstance(usage, dict) and isinstance(groq, dict):
        usage = groq.get("usage")
    if not isinstance(usage, dict):
        return {}
    counts = {
        key: value
        for key in USAGE_FIELDS
        if isinstance(value := usage.get(key), int) and not isinstance(value, bool) and value >= 0
    }
    if "total_tokens" not in counts and {"prompt_tokens", "completion_tokens"} <= counts.keys():
        counts["total_tokens"] = counts["prompt_tokens"] + counts["completion_tokens"]
    return counts


def _texts(delta: JSONObject) -> tuple[str, str]:
    """Return a delta's reasoning and content text, whichever fields and shapes it uses."""
    reasoning = next(
        (value for name in REASONING_FIELDS if isinstance(value := delta.get(name), str) and value),
        "",
    )
    content = delta.get("content")
    if isinstance(content, str):
        return reasoning, content
    said: list[str] = []
    thought: list[str] = [reasoning]
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in _THINKING_PARTS:
            thought.append(_part_text(part.get(str(kind))) or _part_text(part.get("text")))
        else:
            said.append(_part_text(part.get("text")))
    return "".join(thought), "".join(said)


def _part_text(value: JSONValue) -> str:
    """Return the text of a content part: a string, or a list of text parts (Mistral)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_part_text(item.get("text")) for item in value if isinstance(item, dict))
    return ""


def _fragments(delta: JSONObject) -> Iterator[ToolFragment]:
    """Yield the tool-call fragments of a delta, the legacy ``function_call`` included."""
    calls = delta.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            function = call.get("function")
            yield _fragment(call, function if isinstance(function, dict) else {})
    legacy = delta.get("function_call")
    if isinstance(legacy, dict):
        yield _fragment({"index": 0}, legacy)


def _fragment(call: JSONObject, function: JSONObject) -> ToolFragment:
    """Read one fragment: index and id as sent (ids may be numbers), arguments as text."""
    index = call.get("index")
    call_id = call.get("id")
    name = function.get("name")
    return ToolFragment(
        index=index if isinstance(index, int) and not isinstance(index, bool) else None,
        call_id=str(call_id) if isinstance(call_id, str | int) and call_id != "" else None,
        name=name if isinstance(name, str) and name else None,
        arguments=_arguments_text(function.get("arguments")),
    )


def _arguments_text(value: JSONValue) -> str:
    """Return arguments as text: a string as it is, an object or list as compact JSON.

    An empty object is no text: a header fragment ``{}`` may be followed by the arguments.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list) and value:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return ""
