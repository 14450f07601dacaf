"""Running a decided call: once per idempotency key, with state snapshots and an audit record."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..json_types import JSONObject
from ..messages import ToolCallRequest
from .audit import AuditDecision
from .confirmation import ConfirmationToken
from .contract import ToolContext, ToolOutcome, canonical_arguments
from .idempotency import IdempotencyCache, idempotency_key
from .ledger import Ledger
from .registry import RunReport, Tool, ToolRegistry, failure
from .targets import StateProbe, Target

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class GuardedCall:
    """One validated call on its way through the guard, with what it acts on."""

    request: ToolCallRequest
    ctx: ToolContext
    tool: Tool
    args: JSONObject
    targets: tuple[Target, ...] = ()


class CallRunner:
    """Run calls the guard has decided to run; the one place that calls the registry."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        idempotency: IdempotencyCache,
        ledger: Ledger,
        state: StateProbe | None,
        host_timeout: float,
    ) -> None:
        """Bind the registry, the idempotency cache, the ledger and the state probe."""
        self.registry = registry
        self.idempotency = idempotency
        self._ledger = ledger
        self._state = state
        self._host_timeout = host_timeout

    def key(self, call: GuardedCall) -> str | None:
        """Return the idempotency key of a call of an idempotent tool, else None."""
        if not call.tool.idempotent:
            return None
        args = canonical_arguments(call.args)
        return idempotency_key(call.ctx.conversation_id, call.tool.tool_id, args)

    def remembered(self, call: GuardedCall) -> ToolOutcome | None:
        """Return the first result of the same idempotent call, if it ran in the window."""
        key = self.key(call)
        return None if key is None else self.idempotency.lookup(key)

    async def run(
        self,
        call: GuardedCall,
        decision: AuditDecision,
        *,
        reasons: tuple[str, ...] = (),
        token: ConfirmationToken | None = None,
    ) -> ToolOutcome:
        """Run a call through the registry, once per idempotency key; audit it with state."""
        before = await self.snapshot(call.targets)
        reports: list[RunReport] = []

        async def run_once() -> ToolOutcome:
            """Run the tool and keep its report."""
            report = await self.registry.run(call.tool, call.args, call.ctx)
            reports.append(report)
            return report.outcome

        key = self.key(call)
        try:
            if key is None:
                outcome, reused = await run_once(), False
            else:
                outcome, reused = await self.idempotency.run(key, run_once)
        except asyncio.CancelledError:
            interrupted = failure("dependency", "the turn ended while the call ran", retryable=True)
            self._ledger.outcome(call.request, call.ctx, decision, interrupted, token=token)
            raise
        after = None if reused else await self.snapshot(call.targets)
        self._ledger.outcome(
            call.request,
            call.ctx,
            "deduplicated" if reused else decision,
            outcome,
            reasons=reasons,
            report=reports[0] if reports else None,
            token=token,
            state=(before, after),
        )
        return outcome

    async def snapshot(self, targets: Sequence[Target]) -> JSONObject | None:
        """Return the host's snapshot of the targets, or None (no probe, no targets, failure)."""
        if self._state is None or not targets:
            return None
        try:
            async with asyncio.timeout(self._host_timeout):
                return await self._state.snapshot(targets)
        except Exception:
            LOGGER.debug("State snapshot failed", exc_info=True)
            return None
