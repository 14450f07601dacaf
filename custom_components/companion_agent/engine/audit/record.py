"""Audit records: what one tool call attempt leaves behind, redacted, and where it goes.

``AuditRecord`` is one attempt; an ``AuditSink`` accepts records without blocking
(``AuditLog`` appends them to a file; the usage counters count them); ``AuditSinks`` hands
each record to several sinks.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol, Self

from ..chars import clean_text, valid_text
from ..json_types import JSONObject, JSONValue
from ..messages import ToolCallRequest
from ..redaction import redact, scrub_text
from ..tools.contract import ToolContext, ToolOutcome, parse_arguments

AUDIT_VERSION = 1
MAX_RAW_CHARS = 2000
MAX_DETAIL_CHARS = 500

type AuditDecision = Literal[
    "allow",
    "validate",
    "confirm",
    "rejected",
    "refused",
    "deduplicated",
    "approved",
    "denied",
    "expired",
    "interrupted",
]
type CallOutcome = Literal["success", "failure", "pending", "cancelled", "refused"]
type AuditOutcome = CallOutcome
type StateSnapshots = tuple[JSONObject | None, JSONObject | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRecord:
    """One attempt at a tool call: who, where, what was asked, what the guard did, how it ended.

    ``token`` is the hashed confirmation token id; the raw id never reaches the log.
    """

    time: float
    trace_id: str
    user_id: str | None
    conversation_id: str
    tool_id: str
    call_id: str
    arguments: str
    decision: AuditDecision
    outcome: AuditOutcome
    category: str | None = None
    detail: str | None = None
    reasons: tuple[str, ...] = ()
    attempts: int = 0
    tool_ms: float = 0.0
    token: str | None = None
    state_before: JSONObject | None = None
    state_after: JSONObject | None = None
    secret: frozenset[str] = frozenset()
    """Argument names the tool's contract marks secret: always masked."""

    @classmethod
    def for_call(
        cls,
        request: ToolCallRequest,
        ctx: ToolContext,
        decision: AuditDecision,
        outcome: ToolOutcome | CallOutcome,
        *,
        category: str | None = None,
        detail: str | None = None,
        reasons: tuple[str, ...] = (),
        attempts: int = 0,
        tool_ms: float = 0.0,
        token: str | None = None,
        state: StateSnapshots = (None, None),
    ) -> Self:
        """Build the record of one call: by its tool outcome, or by a bare outcome word."""
        if not isinstance(outcome, str):
            if outcome.kind == "failure":
                category = category or outcome.category
            if outcome.kind != "pending":
                detail = outcome.content if detail is None else detail
            outcome = outcome.kind
        return cls(
            time=time.time(),
            trace_id=ctx.trace_id,
            user_id=ctx.user_id,
            conversation_id=ctx.conversation_id,
            tool_id=request.name,
            call_id=request.call_id,
            arguments=request.arguments,
            decision=decision,
            outcome=outcome,
            category=category,
            detail=detail,
            reasons=reasons,
            attempts=attempts,
            tool_ms=tool_ms,
            token=token,
            state_before=state[0],
            state_after=state[1],
            secret=request.secret,
        )

    def to_json(self) -> JSONObject:
        """Return the record as a redacted JSON object."""
        parsed = parse_arguments(self.arguments)
        arguments: JSONValue = (
            redact(parsed, self.secret)
            if parsed is not None
            else scrub_text(clean_text(self.arguments, MAX_RAW_CHARS))
        )
        out: JSONObject = {
            "v": AUDIT_VERSION,
            "time": datetime.fromtimestamp(self.time, UTC).isoformat(timespec="milliseconds"),
            "trace_id": self.trace_id,
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "tool": self.tool_id,
            "call": {"id": self.call_id, "name": self.tool_id, "arguments": arguments},
            "decision": self.decision,
            "outcome": self.outcome,
            "attempts": self.attempts,
            "tool_ms": round(self.tool_ms, 3),
        }
        if self.category is not None:
            out["category"] = self.category
        if self.detail is not None:
            out["detail"] = _redacted_detail(self.detail)
        if self.reasons:
            out["reasons"] = list(self.reasons)
        if self.token is not None:
            out["token"] = self.token
        if self.state_before is not None:
            out["state_before"] = redact(self.state_before)
        if self.state_after is not None:
            out["state_after"] = redact(self.state_after)
        return out

    def to_line(self) -> str:
        """Return the record as one JSON line."""
        return valid_text(json.dumps(self.to_json(), ensure_ascii=False, default=str)) + "\n"


def _redacted_detail(text: str) -> JSONValue:
    """Return an outcome's text for the audit: JSON redacted by key, bounded, else scrubbed."""
    try:
        value: JSONValue = json.loads(text)
    except ValueError:
        return scrub_text(clean_text(text, MAX_DETAIL_CHARS))
    cleaned = redact(value)
    if len(text) <= MAX_DETAIL_CHARS:
        return cleaned
    return clean_text(json.dumps(cleaned, ensure_ascii=False), MAX_DETAIL_CHARS)


class AuditSink(Protocol):
    """Where the guard sends audit records; ``record`` must not block."""

    def record(self, entry: AuditRecord) -> None:
        """Accept one record."""
        ...


class NullAudit:
    """An audit sink that keeps nothing."""

    def record(self, entry: AuditRecord) -> None:
        """Drop the record."""


class AuditSinks:
    """An audit sink that hands each record to several sinks, in order."""

    def __init__(self, *sinks: AuditSink) -> None:
        """Send to ``sinks``."""
        self._sinks = sinks

    def record(self, entry: AuditRecord) -> None:
        """Hand the record to every sink."""
        for sink in self._sinks:
            sink.record(entry)
