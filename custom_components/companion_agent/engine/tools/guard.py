"""The guard in front of the registry: allow, validate or confirm each call before it runs.

Only two paths run a call: ``GuardedExecutor.execute`` when the policy allows it, and
``ConfirmationDesk.resolve`` (or ``answer``, which calls it) when the person confirms a
held call. Nothing the model says is read here: a held call waits for its token whatever
the conversation contains.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Literal

from ..errors import ToolError, ToolValidationError
from ..messages import ToolCallRequest
from .audit import AuditSink, NullAudit
from .confirmation import ConfirmationBook
from .contract import ToolContext, ToolOutcome, ToolSpec
from .desk import ConfirmationDesk
from .idempotency import IdempotencyCache
from .ledger import Entry, Ledger
from .notices import ConfirmationListener, NoticeBoard
from .policy import GuardPolicy
from .registry import ToolRegistry, failure
from .runner import CallRunner, GuardedCall
from .targets import NoTargets, StateProbe, Target, TargetResolver
from .usage import CallOutcome, UsageCounters

LOGGER = logging.getLogger(__name__)

DEFAULT_HOST_TIMEOUT = 2.0


class GuardedExecutor:
    """A ``ToolExecutor`` that decides allow / validate / confirm before anything runs.

    ``confirmations`` is the host's API for held calls; ``counters`` the usage counts.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        resolver: TargetResolver | None = None,
        policy: GuardPolicy | None = None,
        book: ConfirmationBook | None = None,
        audit: AuditSink | None = None,
        idempotency: IdempotencyCache | None = None,
        state: StateProbe | None = None,
        counters: UsageCounters | None = None,
        on_confirmation: ConfirmationListener | None = None,
        notices: NoticeBoard | None = None,
        wall_clock: Callable[[], float] = time.time,
        host_timeout: float = DEFAULT_HOST_TIMEOUT,
    ) -> None:
        """Wire the parts; every one but the registry has a working default."""
        self.registry = registry
        self.counters = UsageCounters() if counters is None else counters
        self._ledger = Ledger(NullAudit() if audit is None else audit, self.counters, wall_clock)
        self._runner = CallRunner(
            registry,
            idempotency=IdempotencyCache() if idempotency is None else idempotency,
            ledger=self._ledger,
            state=state,
            host_timeout=host_timeout,
        )
        self.confirmations = ConfirmationDesk(
            ConfirmationBook() if book is None else book,
            self._runner,
            self._ledger,
            on_confirmation,
            notices,
        )
        self._resolver: TargetResolver = NoTargets() if resolver is None else resolver
        self._policy = GuardPolicy() if policy is None else policy
        self._host_timeout = host_timeout

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
        call = GuardedCall(request=request, ctx=ctx, tool=tool, args=args)
        if (done := self._runner.remembered(call)) is not None:
            self._ledger.outcome(request, ctx, "deduplicated", done)
            return done
        try:
            targets = await self._targets(call)
        except ToolError as err:
            outcome = failure(err.category, str(err), retryable=err.retryable)
            return self._turn_away(request, ctx, "refused", outcome)
        except Exception:
            LOGGER.warning("Target resolver failed for %s", tool.tool_id, exc_info=True)
            message = f"could not tell what {tool.tool_id} would act on, so it was not run"
            return self._turn_away(request, ctx, "refused", failure("execution", message))
        call = GuardedCall(request=request, ctx=ctx, tool=tool, args=args, targets=targets)
        verdict = self._policy.decide(tool.tool_id, tool.policy, targets)
        match verdict.policy:
            case "confirm":
                return self.confirmations.hold(call, verdict)
            case "validate":
                problem = await self._check(call)
                if problem is not None:
                    outcome = failure("validation", f"{tool.tool_id} was not run: {problem}")
                    self._ledger.outcome(request, ctx, "validate", outcome, reasons=verdict.reasons)
                    return outcome
        return await self._runner.run(call, verdict.policy, reasons=verdict.reasons)

    async def _targets(self, call: GuardedCall) -> tuple[Target, ...]:
        """Ask the host what the call acts on, under a timeout."""
        async with asyncio.timeout(self._host_timeout):
            targets = await self._resolver.resolve(call.tool.tool_id, call.args, call.ctx)
        return tuple(targets)

    async def _check(self, call: GuardedCall) -> str | None:
        """Ask the host whether the targets' state allows the call; failing to ask refuses."""
        try:
            async with asyncio.timeout(self._host_timeout):
                return await self._resolver.check(
                    call.tool.tool_id, call.args, call.targets, call.ctx
                )
        except Exception:
            LOGGER.warning("State check failed for %s", call.tool.tool_id, exc_info=True)
            return "its state could not be checked"

    def _turn_away(
        self,
        request: ToolCallRequest,
        ctx: ToolContext,
        decision: Literal["rejected", "refused"],
        outcome: ToolOutcome,
    ) -> ToolOutcome:
        """Audit and return a call that is not decided on (unknown, invalid, unresolvable)."""
        category = outcome.category if outcome.kind == "failure" else None
        kind: CallOutcome = "failure" if decision == "rejected" else "refused"
        entry = Entry(decision=decision, outcome=kind, category=category, detail=outcome.content)
        self._ledger.write(request, ctx, entry)
        return outcome
