"""A stored turn: what is kept of it, and its JSON shape out to the file and back, checked."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

from ..events import SpeechCut, TurnOutcome
from ..json_types import JSONObject, JSONValue
from ..messages import AssistantMessage, ChatMessage, ToolCallRequest, ToolMessage
from ..redaction import redact, scrub_text
from ..tools.contract import truncate

_IMAGE = re.compile(
    r"data:image/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/=]+|!\[[^\]\n]{0,200}\]\([^)\s]{0,2000}\)"
)
FORMAT_VERSION = 2
MAX_STORED_RESULT = 1000
OUTCOMES: frozenset[str] = frozenset({"complete", "cut", "interrupted", "failed", "timed_out"})

INITIATORS: frozenset[str] = frozenset({"person", "proactive"})
SPEECH_CUTS: frozenset[str] = frozenset({"long", "repeated"})

type TurnMessage = AssistantMessage | ToolMessage
type Initiator = Literal["person", "proactive"]
"""Who began a turn: the person speaking, or the home (a trigger, an automation) speaking first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredTurn:
    """One exchange as kept: the person's words, the turn's messages, how it ended.

    For a ``proactive`` turn ``user`` holds the home's instruction, never the person's words.
    """

    user: str
    messages: tuple[TurnMessage, ...] = ()
    outcome: TurnOutcome = "complete"
    time: float = 0.0
    initiator: Initiator = "person"
    trace_id: str = ""
    """The turn's trace id, so a later signal (the person spoke over its audio) finds it."""
    began: float = 0.0
    """When the person spoke (``time`` is when the turn was stored): a forget after it wins."""
    reason: str = ""
    """Why a failed turn failed (the model server did not answer, or was too slow)."""
    speech_cut: SpeechCut | None = None
    """Why its speech ended before its text (``TurnResult.speech_cut``); None: it did not."""
    lines: tuple[str, ...] = ()
    """The holding lines said in it ("One moment, please."): kept in ``messages`` as heard,
    left out of what a later turn's model is shown (``history.as_messages``)."""


def without_images(text: str) -> str:
    """Return ``text`` without inline images (data URLs, markdown images): never stored."""
    return _IMAGE.sub("[image]", text)


def dump_turn(turn: StoredTurn) -> JSONObject:
    """Return a turn as JSON."""
    messages: list[JSONValue] = []
    for message in turn.messages:
        match message:
            case AssistantMessage(content=content, tool_calls=calls):
                rows: list[JSONValue] = [
                    {"id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls
                ]
                messages.append({"role": "assistant", "content": content, "tool_calls": rows})
            case ToolMessage(call_id=call_id, content=content):
                messages.append({"role": "tool", "call_id": call_id, "content": content})
    row: JSONObject = {"user": turn.user, "outcome": turn.outcome, "time": turn.time}
    if turn.initiator != "person":
        row["initiator"] = turn.initiator
    if turn.trace_id:
        row["trace_id"] = turn.trace_id
    if turn.began:
        row["began"] = turn.began
    if turn.reason:
        row["reason"] = turn.reason
    if turn.speech_cut is not None:
        row["speech_cut"] = turn.speech_cut
    if turn.lines:
        row["lines"] = list(turn.lines)
    row["messages"] = messages
    return row


def parse_turns(raw: str) -> list[StoredTurn]:
    """Parse the file's JSON into turns; raise ValueError on any shape problem."""
    data = json.loads(raw)
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise ValueError("unknown format")
    turns = data["turns"]
    if not isinstance(turns, list):
        raise TypeError("turns is not a list")
    return [parse_turn(row) for row in turns]


def parse_turn(row: object) -> StoredTurn:
    """Parse one stored turn; raise on any shape problem."""
    if not isinstance(row, dict):
        raise TypeError("a turn is not an object")
    outcome, user, rows = row["outcome"], row["user"], row["messages"]
    if outcome not in OUTCOMES or not isinstance(user, str) or not isinstance(rows, list):
        raise TypeError("bad turn")
    messages: list[TurnMessage] = [
        ToolMessage(call_id=_text(item["call_id"]), content=_text(item["content"]))
        if item["role"] == "tool"
        else _assistant(item)
        for item in rows
    ]
    when, initiator, began = row["time"], row.get("initiator", "person"), row.get("began", 0.0)
    if not isinstance(when, int | float) or not isinstance(began, int | float):
        raise TypeError("bad time")
    trace_id = _text(row.get("trace_id", ""))
    reason = _text(row.get("reason", ""))
    if initiator not in INITIATORS:
        raise TypeError("bad initiator")
    speech_cut = row.get("speech_cut")
    if speech_cut is not None and speech_cut not in SPEECH_CUTS:
        raise TypeError("bad speech_cut")
    lines = row.get("lines", [])
    if not isinstance(lines, list):
        raise TypeError("bad lines")
    return StoredTurn(
        user=user,
        messages=tuple(messages),
        outcome=cast(TurnOutcome, outcome),
        time=float(when),
        initiator=cast(Initiator, initiator),
        trace_id=trace_id,
        began=float(began),
        reason=reason,
        speech_cut=cast(SpeechCut | None, speech_cut),
        lines=tuple(_text(line) for line in lines),
    )


def _assistant(item: dict[str, object]) -> AssistantMessage:
    """Parse one stored assistant message."""
    rows = item["tool_calls"]
    if not isinstance(rows, list):
        raise TypeError("tool_calls is not a list")
    calls = tuple(
        ToolCallRequest(
            call_id=_text(c["id"]), name=_text(c["name"]), arguments=_text(c["arguments"])
        )
        for c in rows
    )
    return AssistantMessage(content=_text(item["content"]), tool_calls=calls)


def _text(value: object) -> str:
    """Return a stored string; anything else is a shape problem."""
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def stored_result(content: str) -> str:
    """Return a tool result as kept in history: secrets masked, at most a few hundred chars."""
    try:
        value: JSONValue = json.loads(content)
    except ValueError:
        text = scrub_text(content)
    else:
        text = json.dumps(redact(value), ensure_ascii=False)
    return text if len(text) <= MAX_STORED_RESULT else truncate(text, MAX_STORED_RESULT)


def as_heard(messages: Sequence[ChatMessage], heard: str | None) -> tuple[TurnMessage, ...]:
    """Return the turn's messages as stored: results trimmed, text cut to what was shown.

    ``heard`` None keeps the model's text whole; else each assistant text keeps only the
    part of ``heard`` that covers it, in order, so nothing unheard is stored as said.
    """
    kept = [
        ToolMessage(call_id=m.call_id, content=stored_result(m.content))
        if isinstance(m, ToolMessage)
        else m
        for m in messages
        if isinstance(m, AssistantMessage | ToolMessage)
    ]
    return cut_to(kept, heard)


def cut_to(messages: Sequence[TurnMessage], heard: str | None) -> tuple[TurnMessage, ...]:
    """Return ``messages`` with each assistant text cut to its part of ``heard`` (None: whole)."""
    out: list[TurnMessage] = []
    rest = heard
    for message in messages:
        match message:
            case AssistantMessage(content=content, tool_calls=calls):
                if rest is not None:
                    content, rest = rest[: len(content)], rest[len(content) :]
                if content or calls:
                    out.append(AssistantMessage(content=content, tool_calls=calls))
            case ToolMessage():
                out.append(message)
    return tuple(out)


def interrupted_at(
    turn: StoredTurn, heard: str, outcome: TurnOutcome = "interrupted"
) -> StoredTurn:
    """Return ``turn`` marked ``outcome``, its text cut to the model text ``heard``."""
    return replace(turn, outcome=outcome, messages=cut_to(turn.messages, heard))
