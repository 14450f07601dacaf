"""The guard's ledger: one audit record and one count per decision, never blocking."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ConfirmationRefusedError
from ..json_types import JSONObject
from ..messages import ToolCallRequest
from .audit import AuditDecision, AuditRecord, AuditSink
from .confirmation import ConfirmationToken
from .contract import ToolContext, ToolOutcome, canonical_arguments
from .registry import RunReport
from .usage import CallOutcome, UsageCounters

_OUTCOMES: dict[str, CallOutcome] = {
    "success": "success",
    "failure": "failure",
    "pending": "pending",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """What one audit record says beyond the call and its context."""

    decision: AuditDecision
    outcome: CallOutcome
    category: str | None = None
    detail: str | None = None
    reasons: tuple[str, ...] = ()
    report: RunReport | None = None
    token: str | None = None
    state: tuple[JSONObject | None, JSONObject | None] = field(default=(None, None))


class Ledger:
    """Write audit records and keep usage counts for the guard."""

    def __init__(
        self, audit: AuditSink, counters: UsageCounters, wall_clock: Callable[[], float]
    ) -> None:
        """Bind the audit sink, the counters and the wall clock."""
        self.audit = audit
        self.counters = counters
        self._wall_clock = wall_clock

    def outcome(
        self,
        request: ToolCallRequest,
        ctx: ToolContext,
        decision: AuditDecision,
        outcome: ToolOutcome,
        *,
        reasons: tuple[str, ...] = (),
        report: RunReport | None = None,
        token: ConfirmationToken | None = None,
        state: tuple[JSONObject | None, JSONObject | None] = (None, None),
    ) -> None:
        """Record a decided call by its outcome."""
        self.write(
            request,
            ctx,
            Entry(
                decision=decision,
                outcome=_OUTCOMES[outcome.kind],
                category=outcome.category if outcome.kind == "failure" else None,
                detail=None if outcome.kind == "pending" else outcome.content,
                reasons=reasons,
                report=report,
                token=None if token is None else token.ref,
                state=state,
            ),
        )

    def refusal(
        self,
        err: ConfirmationRefusedError,
        *,
        token: ConfirmationToken | None,
        user_id: str | None,
        conversation_id: str,
        arguments: JSONObject | None,
        trace_id: str | None,
    ) -> None:
        """Record a refused confirmation under the presenter's user and conversation."""
        presented = canonical_arguments(arguments) if arguments is not None else None
        request = ToolCallRequest(
            call_id="" if token is None else token.call_id,
            name="unknown" if token is None else token.tool_id,
            arguments=presented or ("{}" if token is None else token.arguments),
        )
        ctx = ToolContext(conversation_id=conversation_id, user_id=user_id, trace_id=trace_id or "")
        entry = Entry(
            decision="refused",
            outcome="refused",
            category=err.reason,
            detail=str(err),
            token=err.token_ref,
        )
        self.write(request, ctx, entry)

    def write(self, request: ToolCallRequest, ctx: ToolContext, entry: Entry) -> None:
        """Send one record to the audit sink and count it."""
        report = entry.report
        self.audit.record(
            AuditRecord(
                time=self._wall_clock(),
                trace_id=ctx.trace_id,
                user_id=ctx.user_id,
                conversation_id=ctx.conversation_id,
                tool_id=request.name,
                call_id=request.call_id,
                arguments=request.arguments,
                decision=entry.decision,
                outcome=entry.outcome,
                category=entry.category,
                detail=entry.detail,
                reasons=entry.reasons,
                attempts=0 if report is None else report.attempts,
                tool_ms=0.0 if report is None else report.tool_ms,
                token=entry.token,
                state_before=entry.state[0],
                state_after=entry.state[1],
            )
        )
        self.counters.count_call(
            conversation_id=ctx.conversation_id,
            user_id=ctx.user_id,
            tool_id=request.name,
            outcome=entry.outcome,
        )
