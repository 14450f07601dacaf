"""The ``datetime`` plugin: one tool, ``get_current_time``, in the home's time zone."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from custom_components.companion_agent.engine.errors import ToolValidationError
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.plugins import PluginContext, ToolPlugin
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool

SPEC = ToolSpec(
    name="get_current_time",
    description=(
        "Get the current date, time and weekday. Without arguments it uses the home's "
        "time zone; pass time_zone (IANA name, e.g. 'Europe/London') for another place."
    ),
    parameters={
        "type": "object",
        "properties": {
            "time_zone": {"type": "string", "description": "IANA time zone name (optional)"}
        },
        "additionalProperties": False,
    },
)


class DateTimePlugin(ToolPlugin):
    """Answer 'what time is it' from the host clock, never from the model's guess."""

    def __init__(self, context: PluginContext) -> None:
        """Remember the configured time zone name; it is resolved on first use."""
        super().__init__(context)
        self._zone_name = context.config.text("time_zone").strip()

    def tools(self) -> Sequence[Tool]:
        """Return the ``get_current_time`` tool."""
        return [Tool(spec=SPEC, handler=self._current_time, read_only=True)]

    async def _current_time(self, args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Return the current date and time as structured data."""
        requested = args.get("time_zone")
        name = requested.strip() if isinstance(requested, str) else self._zone_name
        zone = await _zone(name) if name else self.context.time_zone
        now = self.context.clock().astimezone(zone)
        offset = now.strftime("%z")
        return {
            "datetime": now.isoformat(timespec="seconds"),
            "date": now.date().isoformat(),
            "time": now.strftime("%H:%M"),
            "weekday": now.strftime("%A"),
            "timezone": getattr(zone, "key", None) or now.tzname() or "UTC",
            "utc_offset": f"{offset[:3]}:{offset[3:]}" if offset else "+00:00",
        }


async def _zone(name: str) -> tzinfo:
    """Look a time zone up off the event loop (it may read tzdata files)."""
    try:
        return await asyncio.to_thread(ZoneInfo, name)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ToolValidationError(
            f"unknown time zone {name!r}; use an IANA name such as 'Europe/London'"
        ) from err
