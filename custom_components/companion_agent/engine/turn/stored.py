"""The JSON shape of a stored conversation: turns out to the file and back, checked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal, cast

from ..events import TurnOutcome
from ..json_types import JSONObject, JSONValue
from ..messages import AssistantMessage, ToolCallRequest, ToolMessage

FORMAT_VERSION = 2
OUTCOMES: frozenset[str] = frozenset({"complete", "cut", "interrupted", "failed", "timed_out"})

INITIATORS: frozenset[str] = frozenset({"person", "proactive"})

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
    return [_turn(row) for row in turns]


def _turn(row: dict[str, object]) -> StoredTurn:
    """Parse one stored turn."""
    outcome, user, rows = row["outcome"], row["user"], row["messages"]
    if outcome not in OUTCOMES or not isinstance(user, str) or not isinstance(rows, list):
        raise TypeError("bad turn")
    messages: list[TurnMessage] = [
        ToolMessage(call_id=_text(item["call_id"]), content=_text(item["content"]))
        if item["role"] == "tool"
        else _assistant(item)
        for item in rows
    ]
    when, initiator = row["time"], row.get("initiator", "person")
    if not isinstance(when, int | float):
        raise TypeError("bad time")
    if initiator not in INITIATORS:
        raise TypeError("bad initiator")
    return StoredTurn(
        user=user,
        messages=tuple(messages),
        outcome=cast(TurnOutcome, outcome),
        time=float(when),
        initiator=cast(Initiator, initiator),
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
