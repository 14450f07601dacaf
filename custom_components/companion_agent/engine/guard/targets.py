"""What a call acts on: the host tells the guard, so the engine never needs to know HA."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..json_types import JSONObject
from ..tools.contract import ToolContext


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
