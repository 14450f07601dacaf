"""The registry: contracts, validation, timeouts, retries, error classes, bounded results."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from custom_components.companion_agent.engine.errors import (
    ToolContractError,
    ToolDependencyError,
    ToolExecutionError,
)
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.tools.contract import (
    ToolContext,
    ToolOutcome,
    ToolSpec,
    normalise_result,
)
from custom_components.companion_agent.engine.tools.registry import (
    TOOL_RETRY,
    Tool,
    ToolRegistry,
    strict_schema,
)

from .conftest import CTX, call, obj

BRIGHTNESS: JSONObject = {
    "type": "object",
    "properties": {
        "entity_id": {"type": "string"},
        "brightness": {"type": "integer", "minimum": 0, "maximum": 255},
    },
    "required": ["entity_id"],
}


class Counting:
    """A handler that counts its calls and fails (or not) as told."""

    def __init__(self, *errors: BaseException, result: JSONValue = "done") -> None:
        """Raise ``errors`` in order, then return ``result``."""
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Count, then fail or answer."""
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


def light(
    handler: Counting, *, output_schema: JSONObject | None = None, timeout_ms: int = 1000
) -> Tool:
    """Return a light tool around ``handler``."""
    spec = ToolSpec(name="light_set", description="Set a light", parameters=BRIGHTNESS)
    return Tool(spec=spec, handler=handler, output_schema=output_schema, timeout_ms=timeout_ms)


def registry(*tools: Tool, sleeps: list[float] | None = None) -> ToolRegistry:
    """Return a registry whose backoff records delays instead of sleeping."""
    record = sleeps if sleeps is not None else []

    async def no_sleep(seconds: float) -> None:
        """Record the delay."""
        record.append(seconds)

    return ToolRegistry(tools, retry=replace(TOOL_RETRY, sleep=no_sleep))


def error_of(outcome: ToolOutcome) -> JSONObject:
    """Return the structured error the model would read."""
    assert outcome.kind == "failure"
    body = json.loads(outcome.content)
    assert set(body) == {"error", "message", "retryable"}
    assert isinstance(body, dict)
    return body


async def test_valid_call_runs_and_returns_normalised_json() -> None:
    """A valid call runs once; a structured result goes back as compact JSON text."""
    handler = Counting(result={"state": "on", "brightness": 128})
    outcome = await registry(light(handler)).execute(
        call("light_set", '{"entity_id": "light.kitchen", "brightness": 128}'), CTX
    )
    assert outcome.kind == "success"
    assert json.loads(outcome.content) == {"state": "on", "brightness": 128}
    assert handler.calls == 1


async def test_invalid_arguments_never_reach_the_tool() -> None:
    """Out-of-range values are a validation error the model can fix; the tool does not run."""
    handler = Counting()
    outcome = await registry(light(handler)).execute(
        call("light_set", '{"entity_id": "light.kitchen", "brightness": 300}'), CTX
    )
    body = error_of(outcome)
    assert body["error"] == "validation"
    assert body["retryable"] is False
    assert "brightness" in str(body["message"])
    assert "255" in str(body["message"])
    assert handler.calls == 0


async def test_unknown_fields_are_rejected_and_allowed_ones_named() -> None:
    """A schema without additionalProperties still rejects fields it does not declare."""
    handler = Counting()
    outcome = await registry(light(handler)).execute(
        call("light_set", '{"entity_id": "light.kitchen", "colour": "red"}'), CTX
    )
    body = error_of(outcome)
    assert body["error"] == "validation"
    assert "colour" in str(body["message"])
    assert "allowed fields: brightness, entity_id" in str(body["message"])
    assert handler.calls == 0


async def test_missing_required_fields_and_non_object_json_are_validation_errors() -> None:
    """Missing required fields and non-object JSON are validation errors."""
    handler = Counting()
    tools = registry(light(handler))
    missing = error_of(await tools.execute(call("light_set", "{}"), CTX))
    assert "entity_id" in str(missing["message"])
    not_object = error_of(await tools.execute(call("light_set", "[1, 2]"), CTX))
    assert not_object["error"] == "validation"
    assert handler.calls == 0


async def test_unknown_tool_names_the_available_ones() -> None:
    """A call to a tool that does not exist is a validation error listing real tools."""
    body = error_of(await registry(light(Counting())).execute(call("open_pod_bay", "{}"), CTX))
    assert body["error"] == "validation"
    assert "open_pod_bay" in str(body["message"])
    assert "light_set" in str(body["message"])


async def test_timeout_is_a_retryable_dependency_error_not_retried_when_not_idempotent() -> None:
    """A tool past its timeout is cut off; without idempotency it is not run again."""
    runs = 0

    async def slow(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Take far longer than allowed."""
        nonlocal runs
        runs += 1
        await asyncio.sleep(10)
        return "late"

    spec = ToolSpec(name="slow", description="slow")
    tools = registry(Tool(spec=spec, handler=slow, timeout_ms=20))
    report = await tools.run(tools.get("slow") or pytest.fail("missing"), {}, CTX)
    body = error_of(report.outcome)
    assert body == {
        "error": "dependency",
        "message": "slow did not finish within 20 ms",
        "retryable": True,
    }
    assert (runs, report.attempts) == (1, 1)


async def test_timeout_of_an_idempotent_tool_is_retried() -> None:
    """An idempotent tool that times out is tried again after the backoff."""
    runs = 0

    async def flaky(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Hang the first time only."""
        nonlocal runs
        runs += 1
        if runs == 1:
            await asyncio.sleep(10)
        return "ok"

    sleeps: list[float] = []
    spec = ToolSpec(name="flaky", description="flaky")
    tools = registry(Tool(spec=spec, handler=flaky, timeout_ms=20, idempotent=True), sleeps=sleeps)
    report = await tools.run(tools.get("flaky") or pytest.fail("missing"), {}, CTX)
    assert report.outcome.kind == "success"
    assert (runs, report.attempts, sleeps) == (2, 2, [0.2])


async def test_raising_tool_is_an_execution_error_and_not_retried() -> None:
    """A bug in a tool becomes a non-retryable execution error; secrets are scrubbed."""
    handler = Counting(RuntimeError("bulb exploded, api_key=sk-abcdefghijklmnop1234"))
    sleeps: list[float] = []
    tools = registry(light(handler), sleeps=sleeps)
    body = error_of(await tools.execute(call("light_set", '{"entity_id": "light.x"}'), CTX))
    assert body["error"] == "execution"
    assert body["retryable"] is False
    assert "bulb exploded" in str(body["message"])
    assert "sk-abc" not in str(body["message"])
    assert (handler.calls, sleeps) == (1, [])


async def test_business_failure_keeps_its_message() -> None:
    """A ToolExecutionError reaches the model as is, not retried."""
    handler = Counting(ToolExecutionError("the light is not dimmable"))
    body = error_of(
        await registry(light(handler)).execute(call("light_set", '{"entity_id": "l.x"}'), CTX)
    )
    assert body == {
        "error": "execution",
        "message": "the light is not dimmable",
        "retryable": False,
    }
    assert handler.calls == 1


async def test_dependency_error_is_retried_with_backoff_then_reported() -> None:
    """Dependency errors are tried three times (≈200 ms, ≈500 ms apart), then reported."""
    handler = Counting(*(ToolDependencyError("hub unreachable") for _ in range(5)))
    sleeps: list[float] = []
    tools = registry(light(handler), sleeps=sleeps)
    report = await tools.run(light(handler), {"entity_id": "light.x"}, CTX)
    body = error_of(report.outcome)
    assert body["error"] == "dependency"
    assert body["retryable"] is True
    assert "hub unreachable" in str(body["message"])
    assert (handler.calls, report.attempts, sleeps) == (3, 3, [0.2, 0.5])


async def test_dependency_error_that_clears_returns_the_result() -> None:
    """A connection error on the first try and success on the second returns the result."""
    handler = Counting(ConnectionError("reset"), result="on")
    sleeps: list[float] = []
    tools = registry(light(handler), sleeps=sleeps)
    report = await tools.run(light(handler), {"entity_id": "light.x"}, CTX)
    assert report.outcome.content == "on"
    assert (handler.calls, report.attempts, sleeps) == (2, 2, [0.2])


async def test_real_backoff_waits_between_attempts() -> None:
    """With the real sleep the delays are honoured (tiny delays keep the test fast)."""
    handler = Counting(ToolDependencyError("down"), ToolDependencyError("down"), result="up")
    tools = ToolRegistry([light(handler)], retry=replace(TOOL_RETRY, first_delay=0.01, factor=2.0))
    loop = asyncio.get_running_loop()
    started = loop.time()
    outcome = await tools.execute(call("light_set", '{"entity_id": "light.x"}'), CTX)
    assert outcome.content == "up"
    assert loop.time() - started >= 0.03


async def test_output_schema_breach_is_an_execution_error() -> None:
    """A result that breaks the declared output schema does not reach the model as data."""
    schema: JSONObject = {"type": "object", "properties": {"state": {"type": "string"}}}
    tools = registry(light(Counting(result={"state": 3}), output_schema=schema))
    body = error_of(await tools.execute(call("light_set", '{"entity_id": "light.x"}'), CTX))
    assert body["error"] == "execution"
    assert "contract" in str(body["message"])


async def test_long_results_are_truncated_to_the_bound() -> None:
    """A huge result is cut to the registry's bound, in JSON that says so."""
    tools = ToolRegistry([light(Counting(result="x" * 50_000))], max_result_chars=1000)
    outcome = await tools.execute(call("light_set", '{"entity_id": "light.x"}'), CTX)
    assert len(outcome.content) <= 1000
    body = json.loads(outcome.content)
    assert body["truncated"] is True
    assert body["original_chars"] == 50_000


def test_normalise_strips_control_characters_and_handles_odd_values() -> None:
    """Control characters go; NaN and non-JSON values still make valid JSON text."""
    assert normalise_result("a\x00b\x1bc\n") == "abc\n"
    assert json.loads(normalise_result({"v": float("nan")})) == "{'v': nan}"
    assert json.loads(normalise_result({"when": object})) == {"when": str(object)}


def test_strict_schema_forbids_unknown_fields_at_every_level() -> None:
    """Nested objects, array items and anyOf branches become strict; allOf is left alone."""
    schema: JSONObject = {
        "type": "object",
        "properties": {
            "color": {"type": "object", "properties": {"r": {"type": "integer"}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {}}},
            "either": {"anyOf": [{"type": "object", "properties": {"a": {}}}, {"type": "null"}]},
            "both": {"allOf": [{"type": "object", "properties": {"a": {}}}]},
            "open": {"type": "object", "additionalProperties": True},
        },
    }
    strict = strict_schema(schema)
    props = obj(strict["properties"])

    def first(value: JSONValue) -> JSONObject:
        """Return the first sub-schema of a list."""
        assert isinstance(value, list)
        return obj(value[0])

    assert strict["additionalProperties"] is False
    assert obj(props["color"])["additionalProperties"] is False
    assert obj(obj(props["items"])["items"])["additionalProperties"] is False
    assert first(obj(props["either"])["anyOf"])["additionalProperties"] is False
    assert "additionalProperties" not in first(obj(props["both"])["allOf"])
    assert obj(props["open"])["additionalProperties"] is True


def test_registered_spec_is_strict_for_the_model_too() -> None:
    """The schema the model sees is the one that is enforced."""
    tools = registry(light(Counting()))
    assert tools.specs()[0].parameters["additionalProperties"] is False


def test_bad_contracts_are_refused_at_registration() -> None:
    """A malformed schema, a duplicate id or a zero timeout is a programming error."""
    bad = ToolSpec(name="bad", description="bad", parameters={"type": "objekt"})
    with pytest.raises(ToolContractError, match="invalid JSON Schema"):
        ToolRegistry([Tool(spec=bad, handler=Counting())])
    with pytest.raises(ToolContractError, match="registered twice"):
        ToolRegistry([light(Counting()), light(Counting())])
    with pytest.raises(ToolContractError, match="timeout_ms"):
        ToolRegistry([light(Counting(), timeout_ms=0)])
