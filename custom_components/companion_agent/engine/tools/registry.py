"""The tool registry: contracts, argument validation, timeouts, retries, bounded results.

**Schemas.** A tool's JSON Schema is strict by default (an object schema that does not say
otherwise forbids extra fields), compiled once, and its errors are short messages. A host
builds its tools anew for every turn (HA's LLM API does); ``compiled`` keys the checked,
compiled validator by the schema's canonical text, so a contract is checked and compiled
once, not on every turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Protocol

import jsonschema
from jsonschema.exceptions import ValidationError, relevance

from ..chars import clean_text
from ..errors import ToolContractError, ToolDependencyError, ToolError, ToolValidationError
from ..json_types import JSONObject, JSONValue
from ..messages import ImagePart, ToolCallRequest
from ..redaction import scrub_text
from ..retry import RetryPolicy
from .contract import (
    DEFAULT_MAX_RESULT_CHARS,
    Policy,
    ToolContext,
    ToolHandler,
    ToolImages,
    ToolOutcome,
    ToolSpec,
    ToolSuccess,
    argument_problem,
    failure,
    normalise_result,
    parse_arguments,
)
from .holding import HoldingHint

__all__ = [
    "TOOL_RETRY",
    "RunReport",
    "Tool",
    "ToolExecutor",
    "ToolRegistry",
    "failure",
    "normalise_result",
]

LOGGER = logging.getLogger(__name__)

DEFAULT_TIMEOUT_MS = 10_000


def _dependency_failed(error: BaseException) -> bool:
    """Say whether ``error`` is a dependency's (unreachable, timed out), not the tool's own."""
    return isinstance(error, (ToolDependencyError, ConnectionError, TimeoutError))


TOOL_RETRY = RetryPolicy(attempts=3, first_delay=0.2, factor=2.5, retryable=_dependency_failed)
"""Dependency errors only, three tries in all, 0.2 s then 0.5 s apart."""


class ToolExecutor(Protocol):
    """What the agent core needs from a set of tools."""

    def specs(self) -> Sequence[ToolSpec]:
        """Return the tools the model may call this turn."""
        ...

    async def execute(self, call: ToolCallRequest, ctx: ToolContext) -> ToolOutcome:
        """Run one call and return its outcome; never raise for a tool's own failure."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool's contract (schema, limits, policy) and the coroutine that runs it.

    ``spec.parameters`` is the input JSON Schema; object schemas without
    ``additionalProperties`` are made strict on registration. ``policy`` is the tool's own
    floor: the guard may make a call stricter (per domain, per entity), never looser. A
    rule naming the tool matches its id or any of its ``aliases``.
    """

    spec: ToolSpec
    handler: ToolHandler
    output_schema: JSONObject | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    idempotent: bool = False
    policy: Policy = "allow"
    aliases: tuple[str, ...] = ()
    """Other names rules may give the tool (a host's bare name for a prefixed one)."""
    read_only: bool = False
    """The tool only reads (HA's annotation, a plugin's word): a persona whose profile could
    not be read, and so holds every action for a yes, still runs it at once."""
    holding: HoldingHint | None = None
    """What the line said while a slow call runs is about; None: the persona's default."""

    @property
    def tool_id(self) -> str:
        """Return the id the model calls the tool by."""
        return self.spec.name


@dataclass(frozen=True, slots=True, kw_only=True)
class RunReport:
    """How a run ended, after how many attempts, and how long the tool itself took."""

    outcome: ToolOutcome
    attempts: int
    tool_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    """A registered tool with its compiled schemas."""

    tool: Tool
    inputs: SchemaValidator
    outputs: SchemaValidator | None


class ToolRegistry:
    """Holds tool contracts by id; validates and runs calls against them."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        retry: RetryPolicy | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        """Register the given tools; ``retry`` and ``max_result_chars`` apply to all."""
        self._entries: dict[str, _Entry] = {}
        self._retry = TOOL_RETRY if retry is None else retry
        self._max_result_chars = max_result_chars
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> Tool:
        """Add a tool with a strict input schema; return it as registered."""
        name = tool.tool_id
        if name in self._entries:
            raise ToolContractError(f"tool {name!r} is registered twice")
        if tool.timeout_ms <= 0:
            raise ToolContractError(f"tool {name!r}: timeout_ms must be positive")
        strict = replace(tool.spec, parameters=strict_schema(tool.spec.parameters))
        tool = replace(tool, spec=strict)
        inputs = compiled(strict.parameters, what=f"tool {name!r} input")
        outputs = None
        if tool.output_schema is not None:
            outputs = compiled(tool.output_schema, what=f"tool {name!r} output")
        self._entries[name] = _Entry(tool=tool, inputs=inputs, outputs=outputs)
        return tool

    def unregister(self, tool_id: str) -> None:
        """Remove a tool; unknown ids are ignored."""
        self._entries.pop(tool_id, None)

    def get(self, tool_id: str) -> Tool | None:
        """Return the registered tool, or None."""
        entry = self._entries.get(tool_id)
        return None if entry is None else entry.tool

    def specs(self) -> Sequence[ToolSpec]:
        """Return the specs of every registered tool."""
        return [entry.tool.spec for entry in self._entries.values()]

    def read_only(self) -> frozenset[str]:
        """Return the ids of the registered tools that only read."""
        return frozenset(name for name, entry in self._entries.items() if entry.tool.read_only)

    def holding_hints(self) -> dict[str, HoldingHint]:
        """Return the holding hint of every registered tool that has one, by tool id."""
        return {
            name: entry.tool.holding
            for name, entry in self._entries.items()
            if entry.tool.holding is not None
        }

    def unknown(self, tool_id: str) -> ToolOutcome:
        """Return the failure for a call to a tool that does not exist."""
        names = ", ".join(sorted(self._entries)) or "none"
        return failure("validation", f"unknown tool {tool_id!r}; tools available: {names}")

    def check_arguments(self, tool: Tool, raw: str) -> JSONObject:
        """Parse and validate a call's arguments; raise ``ToolValidationError`` when they fail."""
        args = parse_arguments(raw)
        if args is None:
            raise ToolValidationError(
                f"arguments for {tool.tool_id!r} are not a JSON object; it was not run, call "
                f"again with a JSON object ({argument_problem(raw)})"
            )
        problems = self._entries[tool.tool_id].inputs.problems(args)
        if problems:
            raise ToolValidationError(
                f"invalid arguments for {tool.tool_id!r}, it was not run: " + "; ".join(problems)
            )
        return args

    async def run(self, tool: Tool, args: JSONObject, ctx: ToolContext) -> RunReport:
        """Run validated arguments; retry dependency errors; never raise for the tool's failure."""
        entry = self._entries.get(tool.tool_id)
        if entry is None:
            return RunReport(outcome=self.unknown(tool.tool_id), attempts=0, tool_ms=0.0)
        attempts = 0
        tool_ms = 0.0
        while True:
            attempts += 1
            started = time.perf_counter()
            outcome, error = await self._attempt(entry, args, ctx)
            tool_ms += (time.perf_counter() - started) * 1000
            if error is None or not self._retry.allows(attempts, error):
                return RunReport(outcome=outcome, attempts=attempts, tool_ms=tool_ms)
            delay = self._retry.delay(attempts)
            LOGGER.debug("Retrying %s in %.2fs (attempt %d)", tool.tool_id, delay, attempts)
            await self._retry.sleep(delay)

    async def execute(self, call: ToolCallRequest, ctx: ToolContext) -> ToolOutcome:
        """Validate and run one call with no guard in front; failures become outcomes."""
        tool = self.get(call.name)
        if tool is None:
            return self.unknown(call.name)
        try:
            args = self.check_arguments(tool, call.arguments)
        except ToolValidationError as err:
            return failure(err.category, str(err))
        return (await self.run(tool, args, ctx)).outcome

    async def _attempt(
        self, entry: _Entry, args: JSONObject, ctx: ToolContext
    ) -> tuple[ToolOutcome, BaseException | None]:
        """Run the handler once under its timeout; return the error a retry may answer."""
        tool = entry.tool
        try:
            async with asyncio.timeout(tool.timeout_ms / 1000):
                value = await tool.handler(args, ctx)
        except TimeoutError as err:
            # The call may have taken effect: only an idempotent tool is tried again.
            message = f"{tool.tool_id} did not finish within {tool.timeout_ms} ms"
            return failure("dependency", message, retryable=True), err if tool.idempotent else None
        except (ToolDependencyError, ConnectionError) as err:
            message = f"{tool.tool_id}: {_reason(err)}"
            return failure("dependency", message, retryable=True), err
        except ToolError as err:
            return failure(err.category, str(err), retryable=err.retryable), None
        except Exception as err:  # a tool's bug must not end the turn
            LOGGER.warning("Tool %s raised %s", tool.tool_id, type(err).__name__, exc_info=True)
            return failure("execution", f"{tool.tool_id} failed: {_reason(err)}"), None
        return self._result(entry, value), None

    def _result(self, entry: _Entry, value: JSONValue | ToolImages) -> ToolOutcome:
        """Check the value against the output schema and normalise it for the model."""
        images: tuple[ImagePart, ...] = ()
        if isinstance(value, ToolImages):
            images = value.images
            value = value.value
        if entry.outputs is not None:
            problems = entry.outputs.problems(value)
            if problems:
                LOGGER.warning("Tool %s broke its output schema: %s", entry.tool.tool_id, problems)
                return failure(
                    "execution", f"{entry.tool.tool_id} returned a result that breaks its contract"
                )
        return ToolSuccess(content=normalise_result(value, self._max_result_chars), images=images)


def _reason(err: BaseException) -> str:
    """Return an error's type and message, secrets scrubbed."""
    text = str(err)
    return scrub_text(f"{type(err).__name__}: {text}" if text else type(err).__name__)


# Schemas: strict by default, compiled once, short error messages.
MAX_REPORTED_ERRORS = 3
MAX_MESSAGE_CHARS = 160
MAX_COMPILED = 1024

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_ONE = ("items", "additionalItems", "not", "then", "else", "if", "contains")


def strict_schema(schema: JSONObject) -> JSONObject:
    """Return a copy where every object schema without ``additionalProperties`` forbids them.

    Branches of ``allOf`` are left as they are: forbidding extra fields per branch would
    reject every instance that combines them.
    """
    out: JSONObject = {key: _strict_value(key, value) for key, value in schema.items()}
    is_object = out.get("type") == "object" or "properties" in out
    if is_object and "additionalProperties" not in out and "unevaluatedProperties" not in out:
        out["additionalProperties"] = False
    return out


def _strict_value(key: str, value: JSONValue) -> JSONValue:
    """Make the sub-schemas under one keyword strict."""
    if key in _SUBSCHEMA_LISTS and isinstance(value, list):
        return [strict_schema(v) if isinstance(v, dict) else v for v in value]
    if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
        return {k: strict_schema(v) if isinstance(v, dict) else v for k, v in value.items()}
    if key in _SUBSCHEMA_ONE and isinstance(value, dict):
        return strict_schema(value)
    return value


def compiled(schema: JSONObject, *, what: str) -> SchemaValidator:
    """Return the checked, compiled validator of ``schema``; a bad schema is a contract error."""
    try:
        return _compile(json.dumps(schema, sort_keys=True, ensure_ascii=False))
    except jsonschema.SchemaError as err:
        raise ToolContractError(f"{what}: invalid JSON Schema: {err.message}") from err


@lru_cache(maxsize=MAX_COMPILED)
def _compile(canonical: str) -> SchemaValidator:
    """Check and compile one schema, given as canonical JSON text."""
    schema = json.loads(canonical)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return SchemaValidator(cls(schema))


class SchemaValidator:
    """A compiled JSON Schema that reports at most a few short errors."""

    def __init__(self, validator: jsonschema.protocols.Validator) -> None:
        """Wrap a checked, compiled validator (use ``compiled``)."""
        self._validator = validator

    def problems(self, instance: JSONValue) -> list[str]:
        """Return short messages for what is wrong with ``instance``; empty when it fits."""
        errors = sorted(self._validator.iter_errors(instance), key=relevance)
        return [_describe(err) for err in errors[:MAX_REPORTED_ERRORS]]


def _describe(err: ValidationError) -> str:
    """Describe one error: where, what, and for unknown fields what is allowed."""
    where = "/".join(str(part) for part in err.absolute_path) or "arguments"
    message = clean_text(err.message, MAX_MESSAGE_CHARS, marker="…")
    if err.validator == "additionalProperties" and isinstance(err.schema, dict):
        allowed = err.schema.get("properties")
        if isinstance(allowed, dict):
            message += f"; allowed fields: {', '.join(sorted(allowed)) or 'none'}"
    return f"{where}: {message}"
