"""Guard policy: what a call acts on, and the rules over it; the strictest matching rule wins.

The host tells the guard what a call acts on (``TargetResolver``: the engine never needs to
know HA). The engine knows only that a rule matches a tool, a domain or an entity,
optionally under a condition on the target that the host supplies. Which actions are risky
(unlocking a door, disarming an alarm) is the host's knowledge: it passes its rules to
``GuardPolicy``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Protocol

from ..json_types import JSONObject
from ..tools.contract import Policy, ToolContext


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """One entity a call would act on, and the action the host says it would take.

    ``action`` None means the host cannot tell which action; the host's rules then treat
    it as the riskiest one (the guard fails closed).
    """

    entity_id: str
    domain: str
    action: str | None = None
    device_class: str | None = None
    name: str | None = None

    def describe(self) -> JSONObject:
        """Return the target as the model and dashboards see it."""
        out: JSONObject = {"entity_id": self.entity_id, "domain": self.domain}
        if self.name:
            out["name"] = self.name
        if self.action:
            out["action"] = self.action
        if self.device_class:
            out["device_class"] = self.device_class
        return out

    def names(self) -> tuple[str, ...]:
        """Return the words that name the target: its entity id's parts and its name."""
        words = self.entity_id.replace(".", " ").replace("_", " ")
        return (words, self.name) if self.name else (words,)


class TargetResolver(Protocol):
    """The host's view of a call: which entities it touches, and whether their state allows it."""

    async def resolve(self, tool_id: str, args: JSONObject, ctx: ToolContext) -> Sequence[Target]:
        """Return the entities the call would act on; empty when it acts on none."""
        ...

    async def check(
        self, tool_id: str, args: JSONObject, targets: Sequence[Target], ctx: ToolContext
    ) -> str | None:
        """Return why the call should not run now (for ``validate``), or None when it may."""
        ...


class StateProbe(Protocol):
    """The host's snapshot of the targets' state, stored in the audit before and after."""

    async def snapshot(self, targets: Sequence[Target]) -> JSONObject:
        """Return the current state of the targets (small, JSON)."""
        ...


class NoTargets:
    """A resolver for hosts without entities: no call acts on any."""

    async def resolve(self, tool_id: str, args: JSONObject, ctx: ToolContext) -> Sequence[Target]:
        """Return no targets."""
        return ()

    async def check(
        self, tool_id: str, args: JSONObject, targets: Sequence[Target], ctx: ToolContext
    ) -> str | None:
        """Allow every call."""
        return None


STRICTNESS: dict[Policy, int] = {"allow": 0, "validate": 1, "confirm": 2}

type TargetCondition = Callable[[Target], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyRule:
    """A rule: every criterion given must match; ``tool`` and ``entity_id`` take globs.

    A rule with only ``tool`` (or nothing) applies to the call whatever it targets; a rule
    with a ``domain``, ``entity_id`` or ``when`` applies when any target matches them. A rule
    for ``actions_only`` passes the calls of a tool that only reads (``Tool.read_only``).
    """

    policy: Policy
    tool: str | None = None
    domain: str | None = None
    entity_id: str | None = None
    when: TargetCondition | None = None
    reason: str = ""
    actions_only: bool = False
    voice: bool = False
    """A call this rule holds waits for an enrolled adult's voice (or the host's word that
    the signed-in person may approve): a child's or an unknown voice cannot say yes to it."""

    @classmethod
    def for_tool(cls, tool: str, policy: Policy) -> PolicyRule:
        """Build a rule for a tool id (glob), as a profile marks it."""
        return cls(policy=policy, tool=tool, reason=f"tool {tool} is marked {policy}")

    @classmethod
    def for_domain(cls, domain: str, policy: Policy) -> PolicyRule:
        """Build a rule for every entity of a domain, as a profile marks it."""
        return cls(policy=policy, domain=domain, reason=f"domain {domain} is marked {policy}")

    @classmethod
    def for_entity(cls, entity_id: str, policy: Policy) -> PolicyRule:
        """Build a rule for one entity id (glob), as a profile marks it."""
        return cls(policy=policy, entity_id=entity_id, reason=f"{entity_id} is marked {policy}")

    @classmethod
    def for_every_action(cls, reason: str) -> PolicyRule:
        """Build a rule that holds every call of a tool that does not only read."""
        return cls(policy="confirm", actions_only=True, reason=reason)

    @property
    def needs_target(self) -> bool:
        """Return True when the rule looks at entities, not only at the tool."""
        return bool(self.domain or self.entity_id or self.when)

    def matches(
        self,
        tool_id: str,
        target: Target | None,
        aliases: Sequence[str] = (),
        *,
        read_only: bool = False,
    ) -> bool:
        """Return True when the rule applies to this tool (by any name) and target."""
        if self.actions_only and read_only:
            return False
        if self.tool is not None and not any(
            fnmatchcase(name, self.tool) for name in (tool_id, *aliases)
        ):
            return False
        if not self.needs_target:
            return True
        if target is None:
            return False
        if self.domain is not None and target.domain != self.domain:
            return False
        if self.entity_id is not None and not fnmatchcase(target.entity_id, self.entity_id):
            return False
        return self.when is None or self.when(target)


def profile_rules(marks: Mapping[str, Policy]) -> list[PolicyRule]:
    """Turn ``[policy]`` marks into rules: ``a.b`` is an entity, else a domain or a tool."""
    rules: list[PolicyRule] = []
    for key, level in marks.items():
        if "." in key:
            rules.append(PolicyRule.for_entity(key, level))
        else:
            rules.extend((PolicyRule.for_domain(key, level), PolicyRule.for_tool(key, level)))
    return rules


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The guard's decision for one call and the reasons behind it."""

    policy: Policy
    reasons: tuple[str, ...] = ()
    voice: bool = False
    """A rule that holds the call asks for an adult's voice (``PolicyRule.voice``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GuardPolicy:
    """The rules the guard applies; the tool's own policy is always one of them."""

    rules: tuple[PolicyRule, ...] = ()

    def extended(self, rules: Iterable[PolicyRule]) -> GuardPolicy:
        """Return a policy with more rules (a profile's marks) after these."""
        return GuardPolicy(rules=(*self.rules, *rules))

    def decide(
        self,
        tool_id: str,
        own: Policy,
        targets: Sequence[Target],
        aliases: Sequence[str] = (),
        *,
        read_only: bool = False,
    ) -> Verdict:
        """Return the strictest policy among the tool's own and every matching rule.

        A rule naming a tool matches it by its id or any of its ``aliases``; ``read_only``
        says the tool only reads. A held call asks for an adult's voice when any matching
        rule that holds it says so.
        """
        policy = own
        reasons: list[str] = [f"tool {tool_id} is {own}"] if own != "allow" else []
        voice = False
        for rule in self.rules:
            if not _applies(rule, tool_id, targets, aliases, read_only):
                continue
            if STRICTNESS[rule.policy] > STRICTNESS[policy]:
                policy = rule.policy
                reasons = []
            if rule.policy == policy and rule.policy != "allow":
                reasons.append(rule.reason or rule.policy)
            voice = voice or (rule.voice and rule.policy == "confirm")
        return Verdict(policy=policy, reasons=tuple(reasons), voice=voice and policy == "confirm")


def _applies(
    rule: PolicyRule,
    tool_id: str,
    targets: Sequence[Target],
    aliases: Sequence[str],
    read_only: bool,
) -> bool:
    """Return True when the rule matches the call or any of its targets."""
    if not rule.needs_target:
        return rule.matches(tool_id, None, aliases, read_only=read_only)
    return any(rule.matches(tool_id, t, aliases, read_only=read_only) for t in targets)
