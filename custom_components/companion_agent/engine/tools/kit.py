"""The guard's long-lived parts for one host, and the per-turn executor built from them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .audit import AuditSink, NullAudit
from .confirmation import ConfirmationBook
from .contract import Policy
from .guard import GuardedExecutor
from .idempotency import IdempotencyCache
from .notices import ConfirmationListener, NoticeBoard
from .policy import GuardPolicy, PolicyRule
from .registry import ToolRegistry
from .targets import NoTargets, StateProbe, TargetResolver
from .usage import UsageCounters


def profile_rules(marks: Mapping[str, Policy]) -> list[PolicyRule]:
    """Turn ``[policy]`` marks into rules: ``a.b`` is an entity, else a domain or a tool."""
    rules: list[PolicyRule] = []
    for key, level in marks.items():
        if "." in key:
            rules.append(PolicyRule.for_entity(key, level))
        else:
            rules.extend((PolicyRule.for_domain(key, level), PolicyRule.for_tool(key, level)))
    return rules


@dataclass(slots=True, kw_only=True)
class GuardKit:
    """Tokens, notices, idempotency, audit and counters: what outlives a single turn."""

    book: ConfirmationBook = field(default_factory=ConfirmationBook)
    notices: NoticeBoard = field(default_factory=NoticeBoard)
    idempotency: IdempotencyCache = field(default_factory=IdempotencyCache)
    counters: UsageCounters = field(default_factory=UsageCounters)
    audit: AuditSink = field(default_factory=NullAudit)
    resolver: TargetResolver = field(default_factory=NoTargets)
    state: StateProbe | None = None
    listener: ConfirmationListener | None = None

    def executor(
        self,
        registry: ToolRegistry,
        marks: Mapping[str, Policy],
        *,
        resolver: TargetResolver | None = None,
        state: StateProbe | None = None,
    ) -> GuardedExecutor:
        """Return one turn's guarded executor: a profile's marks, the turn's view of the host."""
        return GuardedExecutor(
            registry,
            resolver=self.resolver if resolver is None else resolver,
            policy=GuardPolicy().extended(profile_rules(marks)),
            book=self.book,
            audit=self.audit,
            idempotency=self.idempotency,
            state=self.state if state is None else state,
            counters=self.counters,
            on_confirmation=self.listener,
            notices=self.notices,
        )
