"""The tool registry: looks tools up, runs them, and turns every outcome into model text."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import ToolError
from ..messages import ToolCallRequest
from .contract import (
    ToolContext,
    ToolFailure,
    ToolHandler,
    ToolOutcome,
    ToolSpec,
    ToolSuccess,
    parse_arguments,
)

LOGGER = logging.getLogger(__name__)


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
    """A tool: its contract for the model and the coroutine that runs it."""

    spec: ToolSpec
    handler: ToolHandler


def failure(category: str, message: str, *, retryable: bool = False) -> ToolFailure:
    """Build the short, structured error the model receives."""
    content = json.dumps(
        {"error": category, "message": message, "retryable": retryable}, ensure_ascii=False
    )
    return ToolFailure(content=content, category=category, retryable=retryable)


def normalise_result(value: object) -> str:
    """Turn a tool's return value into the text sent back to the model."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class ToolRegistry:
    """Holds tools by name and executes calls against them."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        """Register the given tools."""
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool; a second tool with the same name is an error."""
        if tool.spec.name in self._tools:
            raise ValueError(f"tool {tool.spec.name!r} is registered twice")
        self._tools[tool.spec.name] = tool

    def specs(self) -> Sequence[ToolSpec]:
        """Return the specs of every registered tool."""
        return [tool.spec for tool in self._tools.values()]

    async def execute(self, call: ToolCallRequest, ctx: ToolContext) -> ToolOutcome:
        """Run one call; unknown tools, bad JSON and raising tools become failures."""
        tool = self._tools.get(call.name)
        if tool is None:
            names = ", ".join(sorted(self._tools)) or "none"
            return failure("validation", f"unknown tool {call.name!r}; tools available: {names}")
        args = parse_arguments(call.arguments)
        if args is None:
            return failure(
                "validation", f"arguments for {call.name!r} are not a JSON object; call again"
            )
        try:
            value = await tool.handler(args, ctx)
        except ToolError as err:
            return failure(err.category, str(err), retryable=err.retryable)
        except Exception as err:  # a tool's bug must not end the turn
            LOGGER.warning("Tool %s raised %s", call.name, type(err).__name__, exc_info=True)
            return failure("execution", f"{call.name} failed: {type(err).__name__}: {err}")
        return ToolSuccess(content=normalise_result(value))
