"""Tool calls a model wrote as text: taken out of the reply and made real calls.

Small local models often write the call instead of making it: Llama 3.x and small Ollama
models ``{"name": "...", "parameters": {...}}`` as the whole reply, Qwen and Hermes
templates ``<tool_call>{...}</tool_call>``, LM Studio's default format
``[TOOL_REQUEST]{...}[END_TOOL_REQUEST]``, Mistral ``[TOOL_CALLS][{...}]``, Llama 3.1
``<|python_tag|>{...}``, any of them in a code fence. Such text is never shown or spoken;
it becomes a ``ToolCallRequest`` that takes the same path through the guard as any call.

Speech starts early, so what is held back is bounded and only what may be a call:

- a reply (or the text after a call) that starts with ``{``, ``[`` or a code fence is held
  until its JSON value (or fence) closes: a call is taken out, anything else is released
  as text, at the latest after ``MAX_HELD`` characters;
- a marker tag anywhere starts a held block up to its closing tag; text in a marked block
  is never released (an unreadable call with a name is still passed on, so that the
  model hears why it failed);
- only a partial marker at the end of a chunk (``<tool_c``) waits for the next chunk.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Collection
from typing import Literal

from ..json_types import JSONObject, JSONValue
from ..messages import ToolCallRequest
from .arguments import lenient_json, repair_arguments

LOGGER = logging.getLogger(__name__)

MAX_HELD = 8000
MARKERS: dict[str, str | None] = {
    "<tool_call>": "</tool_call>",
    "[TOOL_REQUEST]": "[END_TOOL_REQUEST]",
    "[TOOL_CALLS]": None,
    "<|python_tag|>": None,
}
"""Opening marker → closing marker (None: a JSON value follows the marker)."""
FENCE = "```"
CALL_KEYS = frozenset({"name", "arguments", "parameters", "type", "id", "function"})
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_NAMED = re.compile(r"\"name\"\s*:\s*\"([A-Za-z0-9_.:-]{1,64})\"")
_CALLISH = re.compile(r"\A\s*[\[{]\s*[\"']?(?:name|function|type)[\"']?\s*:")

type Mode = Literal["start", "text", "json", "fence", "block"]


class TextToolCalls:
    """Feed reply text; get back the text to show; find the calls in ``calls``."""

    def __init__(self, tool_names: Collection[str] = ()) -> None:
        """Know the offered tools (a call without arguments must name one of them)."""
        self.calls: list[ToolCallRequest] = []
        self._names = frozenset(tool_names)
        self._mode: Mode = "start"
        self._held = ""
        self._closer: str | None = None
        self._marked = False
        self._after_call = False
        self._scan = _Scanner()

    def feed(self, text: str) -> str:
        """Take a chunk of reply text; return what of it can be shown now."""
        self._held += text
        out: list[str] = []
        while self._step(out):
            pass
        return "".join(out)

    def flush(self) -> str:
        """End of the reply: decide on whatever is held; return the text to show."""
        held, mode, self._held = self._held, self._mode, ""
        self._mode = "text"
        if mode == "block" or (mode == "json" and self._marked):
            self._take(held, marked=True)
            return ""
        if mode == "fence" and self._take(_fence_body(held), marked=False):
            return ""
        if mode == "json" and _CALLISH.match(held):
            LOGGER.debug("A tool call written as text was cut off; it was dropped")
            return ""
        if mode == "start" and self._after_call:
            return ""
        return held

    def _step(self, out: list[str]) -> bool:
        """Make one decision on the held text; return True when another may follow."""
        match self._mode:
            case "start":
                return self._start(out)
            case "text":
                return self._text(out)
            case "json":
                return self._json(out)
            case "fence":
                return self._fence(out)
            case "block":
                return self._block()

    def _start(self, out: list[str]) -> bool:
        """At the start of the reply (or after a call): does what comes look like a call?"""
        head = self._held.lstrip()
        if not head:
            return False
        if any(m.startswith(head) and len(head) < len(m) for m in (*MARKERS, FENCE)):
            return False  # maybe a marker or a fence, not yet whole
        if self._after_call:
            self._held = head
        self._after_call = False
        if head.startswith(FENCE):
            self._held, self._mode = head, "fence"
        elif head[0] in "{[" and not any(head.startswith(m) for m in MARKERS):
            self._enter_json(head, marked=False)
        else:
            self._mode = "text"
        return True

    def _text(self, out: list[str]) -> bool:
        """Release text up to a marker (or up to a partial one at the end)."""
        found = [(at, m) for m in MARKERS if (at := self._held.find(m)) >= 0]
        if not found:
            keep = _partial_marker(self._held)
            out.append(self._held[: len(self._held) - keep])
            self._held = self._held[len(self._held) - keep :]
            return False
        at, marker = min(found)
        out.append(self._held[:at])
        rest = self._held[at + len(marker) :]
        self._closer = MARKERS[marker]
        if self._closer is None:
            self._enter_json(rest.lstrip(), marked=True)
        else:
            self._held, self._mode = rest, "block"
        return True

    def _enter_json(self, text: str, *, marked: bool) -> None:
        """Hold a JSON value that may be a call."""
        self._held, self._mode, self._marked = text, "json", marked
        self._scan = _Scanner()

    def _json(self, out: list[str]) -> bool:
        """Wait for the held JSON value to close; take it as calls or release it as text."""
        end = self._scan.end_of_value(self._held)
        if end is None:
            if len(self._held) <= MAX_HELD:
                return False
            end = len(self._held)
        value, self._held = self._held[:end], self._held[end:]
        if self._take(value, marked=self._marked):
            return True
        out.append(value)
        self._mode = "text"
        return True

    def _fence(self, out: list[str]) -> bool:
        """Wait for a code fence to close; take its body as calls or release it as text."""
        first = self._held.find("\n")
        close = self._held.find(FENCE, first + 1) if first >= 0 else -1
        if close < 0:
            if len(self._held) <= MAX_HELD:
                return False
            close = len(self._held) - len(FENCE)
        block, self._held = self._held[: close + len(FENCE)], self._held[close + len(FENCE) :]
        if self._take(_fence_body(block), marked=False):
            return True
        out.append(block)
        self._mode = "text"
        return True

    def _block(self) -> bool:
        """Wait for a marked block to close; its text is a call, never shown."""
        assert self._closer is not None
        at = self._held.find(self._closer)
        if at < 0:
            if len(self._held) > MAX_HELD:
                LOGGER.debug("A marked tool call grew past %d characters; dropped", MAX_HELD)
                self._held, self._mode = "", "text"
            return False
        inner, self._held = self._held[:at], self._held[at + len(self._closer) :]
        self._take(_fence_body(inner.strip()), marked=True)
        return True

    def _take(self, text: str, *, marked: bool) -> bool:
        """Add the calls ``text`` holds; a marked unreadable one is passed on or dropped."""
        calls = self._calls_in(lenient_json(text))
        if calls is None and marked and (named := _NAMED.search(text)):
            calls = [_request(named.group(1), text)]
        if calls is None:
            if marked:
                LOGGER.debug("A marked tool call could not be read; dropped")
                self._mode, self._after_call = "start", True
            return marked
        self.calls.extend(calls)
        self._mode, self._after_call = "start", True
        return True

    def _calls_in(self, value: JSONValue) -> list[ToolCallRequest] | None:
        """Return the calls a JSON value holds (one object or a list of them), or None."""
        items = value if isinstance(value, list) else [value]
        calls = [call for item in items if (call := self._call(item)) is not None]
        return calls if calls and len(calls) == len(items) else None

    def _call(self, item: JSONValue) -> ToolCallRequest | None:
        """Read one call: ``{"name", "arguments"|"parameters"}`` or OpenAI's own shape."""
        if not isinstance(item, dict) or not item.keys() <= CALL_KEYS:
            return None
        function = item.get("function")
        body: JSONObject = function if isinstance(function, dict) else item
        name = body.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            return None
        arguments = body.get("arguments", body.get("parameters"))
        if arguments is None and name not in self._names:
            return None  # {"name": "Bob"} is data, not a call
        if isinstance(arguments, str):
            return _request(name, repair_arguments(arguments))
        return _request(name, json.dumps(arguments or {}, ensure_ascii=False))


def _request(name: str, arguments: str) -> ToolCallRequest:
    """Return a call with an id of its own (the model wrote none)."""
    return ToolCallRequest(call_id=f"call_{secrets.token_hex(6)}", name=name, arguments=arguments)


def _fence_body(text: str) -> str:
    """Return what is inside a code fence (``text`` itself when it is not fenced)."""
    if not text.startswith(FENCE):
        return text
    first = text.find("\n")
    body = text[first + 1 :] if first >= 0 else ""
    return body[: -len(FENCE)] if body.rstrip().endswith(FENCE) else body


def _partial_marker(text: str) -> int:
    """Return the length of the longest end of ``text`` that begins a marker."""
    tail = text[-(max(len(m) for m in MARKERS) - 1) :]
    if "<" not in tail and "[" not in tail:
        return 0  # every marker starts with one of these: the common case, decided at once
    for size in range(min(len(text), max(len(m) for m in MARKERS) - 1), 0, -1):
        if any(m.startswith(text[-size:]) for m in MARKERS):
            return size
    return 0


class _Scanner:
    """Find where a JSON value closes, reading each character once across chunks."""

    def __init__(self) -> None:
        """Start before the value."""
        self._at = 0
        self._depth = 0
        self._quote = ""
        self._escaped = False

    def end_of_value(self, text: str) -> int | None:
        """Return the index after the value's closing bracket, or None while it is open."""
        while self._at < len(text):
            char = text[self._at]
            self._at += 1
            if self._quote:
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == self._quote:
                    self._quote = ""
            elif char in "\"'":
                self._quote = char
            elif char in "{[":
                self._depth += 1
            elif char in "}]":
                self._depth -= 1
                if self._depth <= 0:
                    return self._at
        return None
