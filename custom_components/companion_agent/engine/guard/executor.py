"""The guard in front of the tools: check, decide, then run, hold or refuse each call.

Only two paths run a call: ``GuardedExecutor.execute`` when the policy allows it, and a
held call's own runner (``_run``, bound into its token by ``Confirmations.hold``) when the
person confirms. Every path leaves one audit record. ``Guard`` keeps what outlives a turn
(held calls, idempotency, the audit sink, the host's rules) and builds each turn's executor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..audit import AuditDecision, AuditRecord, AuditSink, CallOutcome, NullAudit
from ..chars import clean_text
from ..errors import ToolError, ToolValidationError
from ..json_types import JSONObject
from ..messages import ToolCallRequest
from ..redaction import redact
from ..tools.contract import (
    ToolContext,
    ToolOutcome,
    ToolSpec,
    ToolSuccess,
    canonical_arguments,
    compact_json,
    json_or_text,
)
from ..tools.idempotency import IdempotencyCache, idempotency_key
from ..tools.registry import RunReport, Tool, ToolRegistry, failure
from .confirmations.held_calls import Confirmations
from .confirmations.tokens import Approval, ConfirmationToken
from .policy import (
    GuardPolicy,
    NoTargets,
    PolicyRule,
    StateProbe,
    Target,
    TargetResolver,
    Verdict,
)

LOGGER = logging.getLogger(__name__)

DEFAULT_HOST_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Call:
    """One validated call on its way through the guard, with what it acts on."""

    request: ToolCallRequest
    ctx: ToolContext
    tool: Tool
    args: JSONObject
    targets: tuple[Target, ...] = ()


@dataclass(slots=True, kw_only=True)
class Guard:
    """What outlives a single turn (held calls, the audit, the host's rules) and the factory
    of each turn's guarded executor.

    ``rules`` are the host's (HA: locks, alarms, garage doors, gates, gas valves); a
    persona's rules (its profile's ``[policy]`` marks) are added per turn.
    """

    confirmations: Confirmations = field(default_factory=Confirmations)
    audit: AuditSink = field(default_factory=NullAudit)
    rules: tuple[PolicyRule, ...] = ()

    def executor(
        self,
        registry: ToolRegistry,
        rules: Sequence[PolicyRule],
        *,
        resolver: TargetResolver | None = None,
        state: StateProbe | None = None,
        voice_approval: bool = True,
    ) -> GuardedExecutor:
        """Return one turn's guarded executor: the host's rules, then the persona's.

        ``voice_approval`` False (the persona's setting): no held call waits for an adult's
        voice, whatever the rules say.
        """
        return GuardedExecutor(
            registry,
            policy=GuardPolicy(rules=self.rules).extended(rules),
            confirmations=self.confirmations,
            audit=self.audit,
            resolver=resolver,
            state=state,
            voice_approval=voice_approval,
        )


class GuardedExecutor:
    """One turn's ``ToolExecutor``: decides allow / validate / confirm before anything runs.

    Within the turn, the same call (tool and arguments) runs at most once: a model that
    repeats it, in a later round or twice in one round, gets the first outcome back with a
    note saying so. A person's new request is a new turn, so it runs again.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        policy: GuardPolicy | None = None,
        confirmations: Confirmations | None = None,
        idempotency: IdempotencyCache | None = None,
        audit: AuditSink | None = None,
        resolver: TargetResolver | None = None,
        state: StateProbe | None = None,
        host_timeout: float = DEFAULT_HOST_TIMEOUT,
        voice_approval: bool = False,
    ) -> None:
        """Wire the parts; every one but the registry has a working default.

        ``voice_approval`` True: a call held under a rule that asks for an adult's voice
        (``PolicyRule.voice``) waits for one (``ConfirmationToken.needs_voice``). Off by
        default here: ``Guard.executor`` passes the persona's setting.
        """
        self.registry = registry
        self._policy = GuardPolicy() if policy is None else policy
        self.confirmations = Confirmations() if confirmations is None else confirmations
        self._idempotency = IdempotencyCache() if idempotency is None else idempotency
        self._audit = NullAudit() if audit is None else audit
        self._resolver: TargetResolver = NoTargets() if resolver is None else resolver
        self._state = state
        self._host_timeout = host_timeout
        self._voice_approval = voice_approval

    def specs(self) -> Sequence[ToolSpec]:
        """Return the tools the model may call."""
        return self.registry.specs()

    async def execute(self, request: ToolCallRequest, ctx: ToolContext) -> ToolOutcome:
        """Check, decide and run (or hold) one call; every path leaves one audit record."""
        tool = self.registry.get(request.name)
        if tool is None:
            return self._turn_away(request, ctx, "rejected", self.registry.unknown(request.name))
        try:
            args = self.registry.check_arguments(tool, request.arguments)
        except ToolValidationError as err:
            return self._turn_away(request, ctx, "rejected", failure(err.category, str(err)))
        call = _Call(request=request, ctx=ctx, tool=tool, args=args)
        if (done := self._idempotency.lookup(_key(call))) is not None:
            self._audit.record(AuditRecord.for_call(request, ctx, "deduplicated", done))
            return _repeated(done)
        try:
            targets = await self._targets(call)
        except ToolError as err:
            outcome = failure(err.category, str(err), retryable=err.retryable)
            return self._turn_away(request, ctx, "refused", outcome)
        except Exception:
            LOGGER.warning("Target resolver failed for %s", tool.tool_id, exc_info=True)
            message = f"could not tell what {tool.tool_id} would act on, so it was not run"
            return self._turn_away(request, ctx, "refused", failure("execution", message))
        call = replace(call, targets=targets)
        verdict = self._policy.decide(
            tool.tool_id, tool.policy, targets, tool.aliases, read_only=tool.read_only
        )
        match verdict.policy:
            case "confirm":
                return self._hold(call, verdict)
            case "validate":
                if (problem := await self._check(call)) is not None:
                    outcome = failure("validation", f"{tool.tool_id} was not run: {problem}")
                    self._audit.record(
                        AuditRecord.for_call(
                            request, ctx, "validate", outcome, reasons=verdict.reasons
                        )
                    )
                    return outcome
        return await self._run(call, verdict.policy, reasons=verdict.reasons)

    def _hold(self, call: _Call, verdict: Verdict) -> ToolOutcome:
        """Hold a call for the person, with its own runner bound into the token."""
        bound = replace(
            call, request=replace(call.request, arguments=canonical_arguments(call.args))
        )

        async def run(token: ConfirmationToken, ctx: ToolContext) -> ToolOutcome:
            """Run the held call once the person has approved it; audit who approved."""
            return await self._run(
                replace(bound, ctx=ctx), "approved", token=token.ref, approval=token.approval
            )

        action: JSONObject = {
            "tool": call.tool.tool_id,
            "description": clean_text(call.tool.spec.description, 200),
            "arguments": redact(call.args, call.request.secret),
            "targets": [target.describe() for target in call.targets],
            "reasons": list(verdict.reasons),
        }
        names = tuple(name for target in call.targets for name in target.names())
        return self.confirmations.hold(
            bound.request,
            call.ctx,
            action,
            run,
            names=names,
            reasons=verdict.reasons,
            needs_voice=verdict.voice and self._voice_approval,
        )

    async def _run(
        self,
        call: _Call,
        decision: AuditDecision,
        *,
        reasons: tuple[str, ...] = (),
        token: str | None = None,
        approval: Approval | None = None,
    ) -> ToolOutcome:
        """Run a decided call once per idempotency key; audit it with the targets' state.

        A call that has reached the tool is not abandoned when the turn is cancelled: it
        finishes (bounded by the tool's own timeout), is audited, and its outcome returned.
        """
        before = await self._snapshot(call.targets)
        reports: list[RunReport] = []

        async def run_once() -> ToolOutcome:
            """Run the tool and keep its report."""
            report = await self.registry.run(call.tool, call.args, call.ctx)
            reports.append(report)
            return report.outcome

        running = asyncio.ensure_future(self._idempotency.run(_key(call), run_once))
        try:
            outcome, reused = await asyncio.shield(running)
        except asyncio.CancelledError:
            if (task := asyncio.current_task()) is not None:
                task.uncancel()
            outcome, reused = await running
        after = None if reused else await self._snapshot(call.targets)
        report = reports[0] if reports else None
        self._audit.record(
            AuditRecord.for_call(
                call.request,
                call.ctx,
                "deduplicated" if reused else decision,
                outcome,
                reasons=reasons,
                attempts=0 if report is None else report.attempts,
                tool_ms=0.0 if report is None else report.tool_ms,
                token=token,
                state=(before, after),
                approved_by=None if approval is None else approval.approved_by,
                by_voice=approval is not None and approval.by_voice,
            )
        )
        return _repeated(outcome) if reused else outcome

    async def _targets(self, call: _Call) -> tuple[Target, ...]:
        """Ask the host what the call acts on, under a timeout."""
        async with asyncio.timeout(self._host_timeout):
            targets = await self._resolver.resolve(call.tool.tool_id, call.args, call.ctx)
        return tuple(targets)

    async def _check(self, call: _Call) -> str | None:
        """Ask the host whether the targets' state allows the call; failing to ask refuses."""
        try:
            async with asyncio.timeout(self._host_timeout):
                return await self._resolver.check(
                    call.tool.tool_id, call.args, call.targets, call.ctx
                )
        except Exception:
            LOGGER.warning("State check failed for %s", call.tool.tool_id, exc_info=True)
            return "its state could not be checked"

    async def _snapshot(self, targets: Sequence[Target]) -> JSONObject | None:
        """Return the host's snapshot of the targets, or None (no probe, no targets, failure)."""
        if self._state is None or not targets:
            return None
        try:
            async with asyncio.timeout(self._host_timeout):
                return await self._state.snapshot(targets)
        except Exception:
            LOGGER.debug("State snapshot failed", exc_info=True)
            return None

    def _turn_away(
        self,
        request: ToolCallRequest,
        ctx: ToolContext,
        decision: AuditDecision,
        outcome: ToolOutcome,
    ) -> ToolOutcome:
        """Audit and return a call that is not decided on (unknown, invalid, unresolvable)."""
        kind: CallOutcome = "failure" if decision == "rejected" else "refused"
        category = outcome.category if outcome.kind == "failure" else None
        self._audit.record(
            AuditRecord.for_call(
                request, ctx, decision, kind, category=category, detail=outcome.content
            )
        )
        return outcome


def _key(call: _Call) -> str:
    """Return the key under which a call runs once per turn."""
    args = canonical_arguments(call.args)
    return idempotency_key(call.ctx.conversation_id, call.tool.tool_id, args)


def _repeated(first: ToolOutcome) -> ToolOutcome:
    """Return the first outcome of a call the model made again, saying it did not run twice."""
    if first.kind != "success":
        return first
    note = "this exact call already ran in this turn; it was not run again"
    body: JSONObject = {"already_done": True, "note": note, "result": json_or_text(first.content)}
    return ToolSuccess(content=compact_json(body))
