"""Per-round overhead of the guarded tool loop: policy + validation + audit, minus tool time.

Run: ``.venv/bin/python benchmarks/tools.py [--rounds N] [--calls N]``. Two measurements:

- ``guard``: one round of N concurrent calls straight through ``GuardedExecutor``
  (schema validation, target resolution, policy, confirmation tokens, idempotency,
  state snapshots, audit queueing), minus the time spent inside the tool handlers;
- ``loop``: the same round driven by ``ToolLoop.run_turn`` with an in-process model, so
  the core's own task and event handling is included too.

The audit log is a real file in a temporary folder; its writer thread runs meanwhile.
Target: p95 ≤ 5 ms per round.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.figures import report_p95
from custom_components.companion_agent.agent.guard_rules import DEFAULT_RULES
from custom_components.companion_agent.engine.audit import AuditLog
from custom_components.companion_agent.engine.guard.executor import GuardedExecutor
from custom_components.companion_agent.engine.guard.policy import GuardPolicy, Target
from custom_components.companion_agent.engine.json_types import (
    JSONObject,
    JSONValue,
)
from custom_components.companion_agent.engine.llm import LLMItem, RoundEnd
from custom_components.companion_agent.engine.messages import (
    ChatMessage,
    ToolCallRequest,
    UserMessage,
)
from custom_components.companion_agent.engine.tools.contract import (
    ToolContext,
    ToolSpec,
)
from custom_components.companion_agent.engine.tools.registry import (
    Tool,
    ToolRegistry,
)
from custom_components.companion_agent.engine.turn.loop import ToolLoop, TurnRecord
from tests.support.lines import ENGLISH

TARGET_P95_MS = 5.0
SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "entity_id": {"type": "string", "pattern": "^[a-z_]+\\.[a-z0-9_]+$"},
        "brightness": {"type": "integer", "minimum": 0, "maximum": 255},
        "transition": {"type": "number", "minimum": 0},
    },
    "required": ["entity_id"],
}
SERVICES = {"light_turn_on": "turn_on", "lock_unlock": "unlock", "sensor_read": None}


class ToolClock:
    """Time spent inside tool handlers, to subtract from the round."""

    def __init__(self) -> None:
        """Start at zero."""
        self.seconds = 0.0

    def tool(self, name: str) -> Tool:
        """Return a tool whose handler measures itself."""

        async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
            """Do a little work, as a fast service call would."""
            started = time.perf_counter()
            result: JSONValue = {"entity_id": args["entity_id"], "state": "on", "attributes": {}}
            self.seconds += time.perf_counter() - started
            return result

        spec = ToolSpec(name=name, description=f"{name} an entity", parameters=SCHEMA)
        return Tool(spec=spec, handler=handler)


class Resolver:
    """A resolver as cheap as the HA glue's lookup in the state machine."""

    async def resolve(self, tool_id: str, args: JSONObject, ctx: ToolContext) -> Sequence[Target]:
        """Return the entity and the service the tool name implies."""
        entity_id = str(args["entity_id"])
        domain = entity_id.split(".", maxsplit=1)[0]
        return (Target(entity_id=entity_id, domain=domain, action=SERVICES[tool_id]),)

    async def check(
        self, tool_id: str, args: JSONObject, targets: Sequence[Target], ctx: ToolContext
    ) -> str | None:
        """Allow everything."""
        return None


class Probe:
    """A state probe that answers from memory."""

    async def snapshot(self, targets: Sequence[Target]) -> JSONObject:
        """Return a fixed state per target."""
        return {t.entity_id: "on" for t in targets}


def round_calls(n: int, calls: int) -> list[ToolCallRequest]:
    """Return one round's calls: lights (allow), an unlock (confirm), a sensor (allow)."""
    kinds = [
        ("light_turn_on", f'{{"entity_id": "light.room_{n}", "brightness": 120}}'),
        ("lock_unlock", f'{{"entity_id": "lock.door_{n}"}}'),
        ("sensor_read", f'{{"entity_id": "sensor.temp_{n}"}}'),
    ]
    return [
        ToolCallRequest(call_id=f"call_{n}_{i}", name=kinds[i % 3][0], arguments=kinds[i % 3][1])
        for i in range(calls)
    ]


class ScriptedModel:
    """An in-process model: tool calls in the first response, text in the second."""

    def __init__(self, calls: list[ToolCallRequest]) -> None:
        """Answer with ``calls`` first."""
        self._calls = calls
        self._sent = False

    async def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Yield one round."""
        if not self._sent:
            self._sent = True
            yield RoundEnd(tool_calls=tuple(self._calls), finish_reason="tool_calls")
            return
        yield "Done."
        yield RoundEnd(finish_reason="stop")


def report(name: str, samples: list[float], figure: str) -> bool:
    """Print p50/p95/max in ms; return whether p95 meets the target."""
    return report_p95(name, samples, TARGET_P95_MS, unit="rounds", figure=figure)


async def bench(rounds: int, calls: int, folder: Path) -> bool:
    """Measure both ways and print the figures."""
    clock = ToolClock()
    registry = ToolRegistry([clock.tool(name) for name in SERVICES])
    audit = AuditLog(folder / "audit.jsonl")
    guard = GuardedExecutor(
        registry,
        policy=GuardPolicy(rules=DEFAULT_RULES),
        resolver=Resolver(),
        audit=audit,
        state=Probe(),
    )
    guard_ms: list[float] = []
    loop_ms: list[float] = []
    for n in range(rounds):
        ctx = ToolContext(conversation_id=f"conv-{n}", user_id="bench", trace_id=f"t{n}")
        clock.seconds = 0.0
        started = time.perf_counter()
        await asyncio.gather(*(guard.execute(c, ctx) for c in round_calls(n, calls)))
        guard_ms.append((time.perf_counter() - started - clock.seconds) * 1000)

        core = ToolLoop(ScriptedModel(round_calls(rounds + n, calls)), guard, ENGLISH)
        clock.seconds = 0.0
        started = time.perf_counter()
        async for _ in core.run_turn([UserMessage(content="go")], ctx, TurnRecord()):
            pass
        loop_ms.append((time.perf_counter() - started - clock.seconds) * 1000)
    started = time.perf_counter()
    await audit.close()
    flush_ms = (time.perf_counter() - started) * 1000
    lines = len(audit.path.read_text(encoding="utf-8").splitlines())
    print(f"{calls} calls per round (allow, confirm, allow …), audit to a real file")
    ok = report("guard", guard_ms[rounds // 10 :], "guard per round (policy, checks, audit)")
    ok = report("loop", loop_ms[rounds // 10 :], "tool loop per round") and ok
    print(f"audit: {lines} records written, final flush {flush_ms:.1f} ms, dropped {audit.dropped}")
    return ok


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        ok = asyncio.run(bench(args.rounds, args.calls, Path(folder)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
