"""Tool contracts the model-adapter tests offer: weather, time, and one with a secret argument."""

from custom_components.companion_agent.engine.tools.contract import ToolSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CLOCK = ToolSpec(
    name="get_time",
    description="Time in a zone",
    parameters={"type": "object", "properties": {"zone": {"type": "string"}}},
)
ALARM = ToolSpec(
    name="alarm_disarm",
    description="Disarm the alarm with its code",
    parameters={
        "type": "object",
        "properties": {"digits": {"type": "string", "x-secret": True}},
        "required": ["digits"],
    },
)
"""``digits`` is secret only because the contract says so (``x-secret``), not by its name."""
