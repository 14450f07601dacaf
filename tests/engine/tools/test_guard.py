"""The guard: policy per tool, domain and entity; rejections, idempotency and counters."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime

import pytest

from custom_components.companion_agent.engine.errors import ToolValidationError
from custom_components.companion_agent.engine.guard.executor import GuardedExecutor
from custom_components.companion_agent.engine.guard.policy import PolicyRule, Target
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool, ToolRegistry

from .conftest import CTX, HOME_RULES, Rig, TinyResolver, call, obj

UNLOCK = call("lock_unlock", '{"entity_id": "lock.front_door"}')


async def test_allowed_call_runs_and_is_audited_with_state(rig: Rig) -> None:
    """Turning on a light runs at once; the audit has who, what, the decision and the state."""
    outcome = await rig.guard.execute(call("light_turn_on", '{"entity_id":"light.kitchen"}'), CTX)
    assert outcome.kind == "success"
    assert rig.house.calls == [("turn_on", "light.kitchen")]
    [record] = await rig.records()
    assert record["decision"] == "allow"
    assert record["outcome"] == "success"
    assert record["trace_id"] == "trace-1"
    assert record["user_id"] == "alice"
    assert record["conversation_id"] == "conv-1"
    assert record["tool"] == "light_turn_on"
    assert record["call"] == {
        "id": "call_1",
        "name": "light_turn_on",
        "arguments": {"entity_id": "light.kitchen"},
    }
    assert record["attempts"] == 1
    assert record["state_before"] == {"light.kitchen": "off"}
    assert record["state_after"] == {"light.kitchen": "on"}
    assert abs(datetime.fromisoformat(str(record["time"])).timestamp() - time.time()) < 60


@pytest.mark.parametrize(
    ("tool", "entity_id", "held"),
    [
        ("lock_unlock", "lock.front_door", True),
        ("lock_lock", "lock.front_door", False),
        ("alarm_disarm", "alarm_control_panel.home", True),
        ("cover_open", "cover.garage_door", True),
        ("cover_open", "cover.blinds", False),
        ("light_turn_on", "light.kitchen", False),
    ],
)
async def test_by_default_locks_alarms_and_garage_covers_wait_and_the_rest_runs(
    rig: Rig, tool: str, entity_id: str, held: bool
) -> None:
    """Locks opening, alarms disarming and garage covers wait; the rest runs."""
    outcome = await rig.guard.execute(call(tool, json.dumps({"entity_id": entity_id})), CTX)
    assert (outcome.kind == "pending") is held
    assert (rig.house.calls == []) is held


async def test_profile_marks_and_unknown_services_are_held(rig: Rig) -> None:
    """A profile can mark an entity or a tool confirm; a lock action the host can't name waits."""
    policy = HOME_RULES.extended(
        [PolicyRule.for_entity("light.kitchen", "confirm"), PolicyRule.for_tool("news*", "confirm")]
    )
    guard = GuardedExecutor(rig.guard.registry, resolver=rig.resolver, policy=policy)
    light = await guard.execute(call("light_turn_on", '{"entity_id": "light.kitchen"}'), CTX)
    assert light.kind == "pending"
    verdict = policy.decide("news_today", "allow", ())
    assert (verdict.policy, verdict.reasons) == ("confirm", ("tool news* is marked confirm",))
    mystery = rig.house.target("lock.front_door", None)
    assert HOME_RULES.decide("lock_do_something", "allow", (mystery,)).policy == "confirm"
    assert rig.house.calls == []


async def test_validate_checks_state_before_running(rig: Rig) -> None:
    """A validate policy asks the host; an unavailable entity is refused with the reason."""
    policy = HOME_RULES.extended([PolicyRule.for_domain("light", "validate")])
    guard = GuardedExecutor(rig.guard.registry, resolver=rig.resolver, policy=policy)
    rig.resolver.unavailable.add("light.kitchen")
    refused = await guard.execute(call("light_turn_on", '{"entity_id": "light.kitchen"}'), CTX)
    assert refused.kind == "failure"
    assert "light.kitchen is unavailable" in refused.content
    assert rig.house.calls == []
    rig.resolver.unavailable.clear()
    ran = await guard.execute(call("light_turn_on", '{"entity_id": "light.kitchen"}'), CTX)
    assert ran.kind == "success"


async def test_a_failing_resolver_fails_closed(rig: Rig) -> None:
    """When the host cannot say what a call acts on, the call does not run."""

    class Broken(TinyResolver):
        """A resolver that fails, once with a message for the model and once with a bug."""

        async def resolve(self, tool_id: str, args: JSONObject, ctx: ToolContext) -> tuple[()]:
            """Fail."""
            if args.get("entity_id") == "lock.nowhere":
                raise ToolValidationError("no lock called nowhere is exposed")
            raise RuntimeError("registry exploded")

    guard = GuardedExecutor(rig.guard.registry, resolver=Broken(rig.house), policy=HOME_RULES)
    unknown = await guard.execute(call("lock_unlock", '{"entity_id": "lock.nowhere"}'), CTX)
    assert json.loads(unknown.content)["error"] == "validation"
    broken = await guard.execute(UNLOCK, CTX)
    assert json.loads(broken.content)["error"] == "execution"
    assert rig.house.calls == []


async def test_invalid_and_unknown_calls_are_rejected_and_audited(rig: Rig) -> None:
    """Bad arguments, unknown fields and unknown tools never run and are each audited."""
    calls = [
        call("light_turn_on", "{}"),
        call("light_turn_on", '{"entity_id": "light.kitchen", "colour": "red"}'),
        call("open_pod_bay_doors", "{}"),
    ]
    outcomes = [await rig.guard.execute(c, CTX) for c in calls]
    assert [json.loads(o.content)["error"] for o in outcomes] == ["validation"] * 3
    assert rig.house.calls == []
    records = await rig.records()
    assert [(r["decision"], r["category"]) for r in records] == [("rejected", "validation")] * 3


async def test_the_same_call_twice_in_a_turn_runs_once(rig: Rig) -> None:
    """Any tool: a model that repeats a call in its turn gets the first outcome, with a note."""
    front_door = '{"entity_id": "lock.front_door"}'
    first = await rig.guard.execute(call("lock_lock", front_door, "call_1"), CTX)
    second = await rig.guard.execute(call("lock_lock", front_door, "call_2"), CTX)
    assert rig.house.calls == [("lock", "lock.front_door")]
    body = json.loads(second.content)
    assert body["already_done"] is True
    assert body["result"] == json.loads(first.content)
    decisions = [r["decision"] for r in await rig.records()]
    assert decisions == ["allow", "deduplicated"]


async def test_a_new_turn_runs_the_same_request_again(rig: Rig) -> None:
    """Adding milk again later is a new request: a new turn's executor runs it."""
    light = '{"entity_id": "light.kitchen"}'
    await rig.guard.execute(call("light_turn_on", light, "call_1"), CTX)
    next_turn = GuardedExecutor(rig.guard.registry, resolver=rig.resolver, policy=HOME_RULES)
    await next_turn.execute(call("light_turn_on", light, "call_1"), CTX)
    assert rig.house.calls == [("turn_on", "light.kitchen")] * 2


async def test_concurrent_duplicates_share_one_execution(rig: Rig) -> None:
    """Two identical idempotent calls in one round: one runs, the other gets its result."""
    gate = asyncio.Event()
    runs = 0

    async def slow_light(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Wait for the gate, counting runs."""
        nonlocal runs
        runs += 1
        await gate.wait()
        return "on"

    spec = ToolSpec(name="slow_light", description="slow")
    guard = GuardedExecutor(ToolRegistry([Tool(spec=spec, handler=slow_light, idempotent=True)]))
    tasks = [
        asyncio.create_task(guard.execute(call("slow_light", "{}", f"call_{n}"), CTX))
        for n in range(2)
    ]
    await asyncio.sleep(0)
    gate.set()
    outcomes = await asyncio.gather(*tasks)
    assert outcomes[0].content == "on"
    assert json.loads(outcomes[1].content) == {
        "already_done": True,
        "note": "this exact call already ran in this turn; it was not run again",
        "result": "on",
    }
    assert runs == 1


async def test_failures_are_not_remembered_by_idempotency(rig: Rig) -> None:
    """A failed idempotent call may run again."""
    runs = 0

    async def fails_once(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Fail the first time."""
        nonlocal runs
        runs += 1
        if runs == 1:
            raise RuntimeError("first time unlucky")
        return "ok"

    spec = ToolSpec(name="once", description="once")
    guard = GuardedExecutor(ToolRegistry([Tool(spec=spec, handler=fails_once, idempotent=True)]))
    assert (await guard.execute(call("once", "{}"), CTX)).kind == "failure"
    assert (await guard.execute(call("once", "{}"), CTX)).kind == "success"
    assert runs == 2


async def test_usage_counters_follow_every_call(rig: Rig) -> None:
    """Calls are counted per conversation, user and tool; tokens per conversation and user."""
    await rig.guard.execute(call("light_turn_on", '{"entity_id": "light.kitchen"}'), CTX)
    await rig.guard.execute(UNLOCK, CTX)
    await rig.guard.confirmations.answer(
        "no", language="en", user_id="alice", conversation_id="conv-1"
    )
    counters = rig.counters
    counters.count_tokens(
        conversation_id="conv-1", user_id="alice", usage={"prompt_tokens": 10, "total_tokens": 12}
    )
    conv = counters.conversation("conv-1")
    assert (conv.calls, conv.succeeded, conv.pending, conv.cancelled) == (3, 1, 1, 1)
    assert (conv.prompt_tokens, conv.total_tokens) == (10, 12)
    assert counters.tool("lock_unlock").calls == 2
    assert counters.user("alice").total_tokens == 12
    snapshot = counters.snapshot()
    assert obj(obj(snapshot["tools"])["light_turn_on"])["succeeded"] == 1


async def test_a_call_already_at_its_tool_finishes_when_the_turn_is_cancelled(
    rig: Rig,
) -> None:
    """Cancelled mid-call: the started call is not abandoned; it ends and is audited as it ended."""
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Start, wait to be released, answer."""
        started.set()
        await release.wait()
        return "done"

    rig.guard.registry.register(Tool(spec=ToolSpec(name="slow", description="x"), handler=slow))
    task = asyncio.create_task(rig.guard.execute(call("slow", "{}"), CTX))
    await started.wait()
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done()
    release.set()
    outcome = await task
    assert (outcome.kind, outcome.content) == ("success", "done")
    [record] = await rig.records()
    assert (record["decision"], record["outcome"]) == ("allow", "success")


async def test_a_call_not_yet_at_its_tool_is_cancelled_with_the_turn(rig: Rig) -> None:
    """Cancelled while the host is still resolving targets: the tool never runs."""
    resolving = asyncio.Event()

    async def stuck(tool_id: str, args: JSONObject, ctx: ToolContext) -> list[Target]:
        """Hang while resolving."""
        resolving.set()
        await asyncio.Event().wait()
        return []

    rig.resolver.resolve = stuck  # type: ignore[method-assign]
    task = asyncio.create_task(rig.guard.execute(UNLOCK, CTX))
    await resolving.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rig.house.calls == []
