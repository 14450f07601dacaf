"""Tool-call arguments from small models, repaired where the mistake is a common one.

Repaired: an empty string (no arguments), a code fence around the object, a JSON string
that holds the object (sent twice encoded), trailing commas, single-quoted strings and
keys, Python's ``True``/``False``/``None``. Never repaired: anything cut off or ambiguous;
an unclosed brace is not closed, since that would invent arguments the model never
finished. Those are passed on as they came, and the tool's contract rejects them with a
short reason the model can act on.
"""

from __future__ import annotations

import json
import re

from ..json_types import JSONValue
from ..tools.contract import json_or_text

MAX_REPAIR_CHARS = 20_000
"""Longer arguments are taken as they are: nothing is rewritten at that size."""

_FENCE = re.compile(r"\A```[A-Za-z_-]*[ \t]*\n?(?P<body>.*?)\n?[ \t]*```\Z", re.DOTALL)
_PYTHON_WORDS = {"True": "true", "False": "false", "None": "null"}
_WORD = re.compile(r"\b(True|False|None)\b")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_JSON_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "/": "/"}


def repair_arguments(raw: str) -> str:
    """Return the arguments as JSON object text: as sent when valid, repaired when possible.

    Text that cannot be made a JSON object comes back unchanged.
    """
    text = raw.strip()
    if not text:
        return "{}"
    if isinstance(_loads(text), dict):
        return raw
    if len(text) > MAX_REPAIR_CHARS:
        return raw
    unfenced = _unfenced(text)
    for candidate in (unfenced, _pythonish(unfenced)):
        value = _loads(candidate)
        if isinstance(value, str):
            value = _loads(_unfenced(value.strip()))
        if isinstance(value, dict):
            return json.dumps(value, ensure_ascii=False)
    return raw


def lenient_json(text: str) -> JSONValue:
    """Return the JSON value of ``text`` read as leniently as ``repair_arguments`` reads.

    None when it is not JSON even then (the text may be JSON ``null``: also None).
    """
    text = _unfenced(text.strip())
    value = _loads(text)
    if value is None and len(text) <= MAX_REPAIR_CHARS:
        value = _loads(_pythonish(text))
    return value


def _loads(text: str) -> JSONValue:
    """Return the JSON value of ``text``, or None when it is not JSON."""
    value = json_or_text(text)
    return None if value is text else value  # the text itself back: it was not JSON


def _unfenced(text: str) -> str:
    """Return the body of a Markdown code fence, or the text itself."""
    match = _FENCE.match(text)
    return match.group("body").strip() if match else text


def _pythonish(text: str) -> str:
    """Rewrite Python-flavoured JSON: single quotes, True/False/None, trailing commas.

    Double-quoted strings are copied as they are; only text outside strings is rewritten.
    """
    out: list[str] = []
    at = 0
    while at < len(text):
        char = text[at]
        if char in "\"'":
            end = _string_end(text, at)
            piece = text[at:end]
            out.append(piece if char == '"' or end > len(text) else _requoted(piece))
            at = end
            continue
        quotes = (text.find('"', at), text.find("'", at))
        end = min((i for i in quotes if i >= 0), default=len(text))
        bare = _WORD.sub(lambda m: _PYTHON_WORDS[m.group(1)], text[at:end])
        out.append(_TRAILING_COMMA.sub(r"\1", bare))
        at = end
    return "".join(out)


def _string_end(text: str, start: int) -> int:
    """Return the index after the string opening at ``start`` (past the end if unclosed)."""
    quote = text[start]
    at = start + 1
    while at < len(text):
        if text[at] == "\\":
            at += 2
            continue
        if text[at] == quote:
            return at + 1
        at += 1
    return len(text) + 1


def _requoted(piece: str) -> str:
    """Turn a closed single-quoted string into a JSON string with the same text."""
    body, chars, at = piece[1:-1], [], 0
    while at < len(body):
        char = body[at]
        if char == "\\" and at + 1 < len(body):
            nxt = body[at + 1]
            chars.append(_JSON_ESCAPES.get(nxt, nxt if nxt in "'\"\\" else "\\" + nxt))
            at += 2
            continue
        chars.append(char)
        at += 1
    return json.dumps("".join(chars), ensure_ascii=False)
