"""Fixtures for the guard tests: a fake clock, a tiny resolver, house tools, a real audit file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from custom_components.companion_agent.agent.guard_rules import DEFAULT_RULES
from custom_components.companion_agent.engine.audit import (
    AuditLog,
    AuditRecord,
    AuditSinks,
    read_audit,
)
from custom_components.companion_agent.engine.guard.confirmations import Confirmations
from custom_components.companion_agent.engine.guard.executor import GuardedExecutor
from custom_components.companion_agent.engine.guard.policy import GuardPolicy, Target
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.messages import ToolCallRequest
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.idempotency import IdempotencyCache
from custom_components.companion_agent.engine.tools.registry import (
    TOOL_RETRY,
    Tool,
    ToolRegistry,
)
from custom_components.companion_agent.engine.turn.usage import UsageCounters

HOME_RULES = GuardPolicy(rules=DEFAULT_RULES)
"""The rules the HA glue supplies: the guard tests hold the engine to HA's defaults."""

ENTITY_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"entity_id": {"type": "string"}},
    "required": ["entity_id"],
}


class FakeClock:
    """A clock that moves only when told."""

    def __init__(self, start: float = 1000.0) -> None:
        """Start at ``start`` seconds."""
        self.now = start

    def __call__(self) -> float:
        """Return the current time."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += seconds


@dataclass
class House:
    """A few entities and the service calls made on them."""

    entities: dict[str, JSONObject] = field(
        default_factory=lambda: {
            "light.kitchen": {"state": "off", "name": "Kitchen light"},
            "lock.front_door": {"state": "locked", "name": "Front door"},
            "cover.garage_door": {"state": "closed", "name": "Garage door", "class": "garage"},
            "cover.blinds": {"state": "closed", "name": "Living room blinds", "class": "shade"},
            "alarm_control_panel.home": {"state": "armed_away", "name": "Home alarm"},
        }
    )
    calls: list[tuple[str, str]] = field(default_factory=list)

    def target(self, entity_id: str, service: str | None) -> Target:
        """Describe an entity as the HA glue would."""
        entity = self.entities.get(entity_id, {})
        device_class = entity.get("class")
        name = entity.get("name")
        return Target(
            entity_id=entity_id,
            domain=entity_id.split(".", maxsplit=1)[0],
            action=service,
            device_class=device_class if isinstance(device_class, str) else None,
            name=name if isinstance(name, str) else None,
        )


SERVICES = {
    "light_turn_on": ("turn_on", "on"),
    "lock_unlock": ("unlock", "unlocked"),
    "lock_lock": ("lock", "locked"),
    "cover_open": ("open_cover", "open"),
    "alarm_disarm": ("alarm_disarm", "disarmed"),
}


class TinyResolver:
    """The resolver protocol over ``House``: the tool name says the service."""

    def __init__(self, house: House) -> None:
        """Resolve against ``house``."""
        self.house = house
        self.unavailable: set[str] = set()

    async def resolve(self, tool_id: str, args: JSONObject, ctx: ToolContext) -> Sequence[Target]:
        """Return the entity named by ``entity_id`` with the tool's service."""
        entity_id = args.get("entity_id")
        if not isinstance(entity_id, str):
            return ()
        service = SERVICES.get(tool_id, (None, None))[0]
        return (self.house.target(entity_id, service),)

    async def check(
        self, tool_id: str, args: JSONObject, targets: Sequence[Target], ctx: ToolContext
    ) -> str | None:
        """Refuse when a target is unavailable."""
        down = [t.entity_id for t in targets if t.entity_id in self.unavailable]
        return f"{', '.join(down)} is unavailable" if down else None


class HouseProbe:
    """The state probe protocol over ``House``."""

    def __init__(self, house: House) -> None:
        """Snapshot ``house``."""
        self.house = house

    async def snapshot(self, targets: Sequence[Target]) -> JSONObject:
        """Return the state of each target."""
        return {t.entity_id: self.house.entities[t.entity_id]["state"] for t in targets}


def service_tool(house: House, name: str, *, idempotent: bool = False) -> Tool:
    """Return a tool that calls the service its name says and records it."""
    service, new_state = SERVICES[name]

    async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Record the service call and change the state."""
        entity_id = str(args["entity_id"])
        house.calls.append((service, entity_id))
        house.entities[entity_id]["state"] = new_state
        return {"entity_id": entity_id, "state": new_state}

    spec = ToolSpec(name=name, description=f"{service} an entity", parameters=ENTITY_SCHEMA)
    return Tool(spec=spec, handler=handler, idempotent=idempotent, timeout_ms=1000)


@dataclass
class Rig:
    """A guard wired to a house, a fake clock and a real audit file."""

    guard: GuardedExecutor
    house: House
    clock: FakeClock
    audit: AuditLog
    resolver: TinyResolver
    counters: UsageCounters
    sleeps: list[float]
    events: list[tuple[str, str]]

    async def records(self) -> list[JSONObject]:
        """Flush the audit log and read it back."""
        await self.audit.flush()
        return read_audit(self.audit.path)


CTX = ToolContext(conversation_id="conv-1", user_id="alice", trace_id="trace-1", language="en")


def obj(value: JSONValue) -> JSONObject:
    """Return a JSON value as an object, failing the test when it is not one."""
    assert isinstance(value, dict), value
    return value


def call(name: str, arguments: str, call_id: str = "call_1") -> ToolCallRequest:
    """Build a tool call as the model sends it."""
    return ToolCallRequest(call_id=call_id, name=name, arguments=arguments)


@pytest.fixture
def clock() -> FakeClock:
    """Return a fake monotonic clock."""
    return FakeClock()


@pytest.fixture
async def rig(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Rig]:
    """Build the guard with every part real and time under the test's control."""
    house = House()
    sleeps: list[float] = []
    events: list[tuple[str, str]] = []

    async def no_sleep(seconds: float) -> None:
        """Record a backoff instead of waiting."""
        sleeps.append(seconds)

    registry = ToolRegistry(
        [
            service_tool(house, "light_turn_on", idempotent=True),
            service_tool(house, "lock_unlock"),
            service_tool(house, "lock_lock"),
            service_tool(house, "cover_open"),
            service_tool(house, "alarm_disarm"),
        ],
        retry=replace(TOOL_RETRY, sleep=no_sleep),
    )
    resolver = TinyResolver(house)
    audit = AuditLog(tmp_path / "audit" / "tools.jsonl", batch_delay=0)
    counters = UsageCounters()
    guard = GuardedExecutor(
        registry,
        policy=HOME_RULES,
        resolver=resolver,
        confirmations=Confirmations(
            ttl=60.0,
            clock=clock,
            audit=AuditSinks(audit, counters),
            listener=lambda token, status: events.append((token.request.name, status)),
        ),
        audit=AuditSinks(audit, counters),
        idempotency=IdempotencyCache(clock=clock),
        state=HouseProbe(house),
    )
    yield Rig(
        guard=guard,
        house=house,
        clock=clock,
        audit=audit,
        resolver=resolver,
        counters=counters,
        sleeps=sleeps,
        events=events,
    )
    await audit.close()


def record(
    n: int,
    *,
    arguments: str = '{"entity_id": "light.kitchen"}',
    detail: str | None = None,
    state_before: JSONObject | None = None,
) -> AuditRecord:
    """Build a plain record numbered ``n``."""
    return AuditRecord(
        time=1_767_225_600.0 + n,
        trace_id=f"trace-{n}",
        user_id="alice",
        conversation_id="conv-1",
        tool_id="light_turn_on",
        call_id=f"call_{n}",
        arguments=arguments,
        decision="allow",
        outcome="success",
        detail=detail,
        state_before=state_before,
    )
