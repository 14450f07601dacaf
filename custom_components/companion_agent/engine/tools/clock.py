"""The built-in clock tool: the current date and time where the home is."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, tzinfo

from ..json_types import JSONObject, JSONValue
from .contract import ToolContext, ToolSpec
from .registry import Tool

CLOCK_TOOL_NAME = "get_current_time"


def clock_tool(zone: tzinfo, now: Callable[[tzinfo], datetime] = datetime.now) -> Tool:
    """Return a tool that reports the current date, time and weekday in ``zone``."""

    async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Report the time now."""
        moment = now(zone)
        return {
            "datetime": moment.isoformat(timespec="seconds"),
            "weekday": moment.strftime("%A"),
            "timezone": str(zone),
        }

    spec = ToolSpec(
        name=CLOCK_TOOL_NAME,
        description="Get the current local date, time and weekday of the home.",
    )
    return Tool(spec=spec, handler=handler)
