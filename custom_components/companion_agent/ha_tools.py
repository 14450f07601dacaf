"""HA's LLM API tools as engine tools, and what a call would act on, for the guard."""

from __future__ import annotations

import json
from collections.abc import Sequence

import voluptuous as vol
from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.core import HomeAssistant, State
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import intent, llm
from voluptuous_openapi import convert

from .engine.errors import ToolExecutionError, ToolValidationError
from .engine.guard.policy import Target
from .engine.json_types import JSONObject, JSONValue
from .engine.tools.contract import ToolContext, ToolSpec
from .engine.tools.registry import Tool
from .engine.vision import CAMERA_TOOL

ENTITY_SLOTS = ("name", "area", "floor", "domain", "device_class")
IDEMPOTENT_TOOLS = frozenset({"HassListAddItem", "HassShoppingListAddItem", "HassBroadcast"})
INTENT_SERVICES: dict[str, dict[str, str]] = {
    intent.INTENT_TURN_ON: {
        "lock": "lock",
        "cover": "open_cover",
        "valve": "open_valve",
        "*": "turn_on",
    },
    intent.INTENT_TURN_OFF: {
        "lock": "unlock",
        "cover": "close_cover",
        "valve": "close_valve",
        "alarm_control_panel": "alarm_disarm",
        "*": "turn_off",
    },
    intent.INTENT_TOGGLE: {"*": "toggle"},
    intent.INTENT_SET_POSITION: {
        "cover": "set_cover_position",
        "valve": "set_valve_position",
        "*": "set_position",
    },
    "HassLightSet": {"*": "turn_on"},
}


def as_json_object(value: object) -> JSONObject:
    """Copy a JSON-shaped value from HA into the engine's JSON types."""
    copied = json.loads(json.dumps(value, default=str))
    return copied if isinstance(copied, dict) else {"result": copied}


class HassTurnTools:
    """One turn's view of HA: its exposed tools, their targets and the targets' state."""

    def __init__(self, hass: HomeAssistant, api: llm.APIInstance | None) -> None:
        """Bind to HA and the LLM API instance of this turn (None: no HA control)."""
        self.hass = hass
        self.api = api

    def tools(self) -> list[Tool]:
        """Return every tool of the API as an engine tool with a JSON Schema contract."""
        if self.api is None:
            return []
        return [self._tool(tool) for tool in self.api.tools]

    def _tool(self, tool: llm.Tool) -> Tool:
        """Wrap one HA tool; HA validates and runs it, the engine guards it."""
        api = self.api
        assert api is not None
        name = tool.name

        async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
            """Run the tool through the LLM API, as HA would."""
            try:
                result = await api.async_call_tool(llm.ToolInput(tool_name=name, tool_args=args))
            except vol.Invalid as err:
                raise ToolValidationError(f"{name}: {err}") from err
            except HomeAssistantError as err:
                raise ToolExecutionError(f"{name}: {err}") from err
            return as_json_object(result)

        schema = as_json_object(convert(tool.parameters, custom_serializer=api.custom_serializer))
        spec = ToolSpec(name=name, description=tool.description or name, parameters=schema)
        return Tool(spec=spec, handler=handler, idempotent=name in IDEMPOTENT_TOOLS)

    async def resolve(self, tool_id: str, args: JSONObject, ctx: ToolContext) -> Sequence[Target]:
        """Return the exposed entities the call would act on, matched as HA's intents do.

        The camera tool acts on the camera it names (so a profile can mark one ``confirm``).
        """
        if tool_id == CAMERA_TOOL:
            camera = self.hass.states.get(str(args.get("camera", "")))
            return [] if camera is None else [_target(camera, "snapshot")]
        script = self.hass.states.get(f"script.{tool_id.removeprefix('_')}")
        if script is not None and not any(slot in args for slot in ENTITY_SLOTS):
            return [_target(script, "turn_on")]
        if not any(slot in args for slot in ENTITY_SLOTS):
            return []
        constraints = intent.MatchTargetsConstraints(
            name=_text(args.get("name")) if args.get("name") != "all" else None,
            area_name=_text(args.get("area")),
            floor_name=_text(args.get("floor")),
            domains=_texts(args.get("domain")),
            device_classes=_texts(args.get("device_class")),
            assistant=CONVERSATION_DOMAIN,
        )
        if not constraints.has_constraints:
            return []
        result = intent.async_match_targets(self.hass, constraints, self._preferences())
        services = INTENT_SERVICES.get(tool_id, {})
        return [
            _target(state, services.get(state.domain, services.get("*"))) for state in result.states
        ]

    async def check(
        self, tool_id: str, args: JSONObject, targets: Sequence[Target], ctx: ToolContext
    ) -> str | None:
        """Refuse a call whose targets are unavailable (for ``validate`` rules)."""
        for target in targets:
            state = self.hass.states.get(target.entity_id)
            if state is None or state.state in ("unavailable", "unknown"):
                return f"{target.entity_id} is unavailable"
        return None

    async def snapshot(self, targets: Sequence[Target]) -> JSONObject:
        """Return the targets' states for the audit log."""
        out: JSONObject = {}
        for target in targets:
            state = self.hass.states.get(target.entity_id)
            out[target.entity_id] = state.state if state is not None else None
        return out

    def _preferences(self) -> intent.MatchTargetsPreferences:
        """Prefer the area of the device the person spoke to, as HA's intents do."""
        device_id = self.api.llm_context.device_id if self.api is not None else None
        device = dr.async_get(self.hass).async_get(device_id) if device_id else None
        area = (
            ar.async_get(self.hass).async_get_area(device.area_id)
            if device and device.area_id
            else None
        )
        return intent.MatchTargetsPreferences(
            area_id=area.id if area else None, floor_id=area.floor_id if area else None
        )


def _target(state: State, service: str | None) -> Target:
    """Describe one entity as a guard target."""
    device_class = state.attributes.get("device_class")
    return Target(
        entity_id=state.entity_id,
        domain=state.domain,
        action=service,
        device_class=str(device_class) if device_class else None,
        name=state.name,
    )


def _text(value: JSONValue | None) -> str | None:
    """Return a slot value as text, or None."""
    return value if isinstance(value, str) and value else None


def _texts(value: JSONValue | None) -> set[str] | None:
    """Return a list slot (or a single string) as a set of strings, or None."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {item for item in value if isinstance(item, str)} or None
    return None
