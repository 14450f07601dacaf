"""HA's LLM API tools as engine tools, and what a call would act on, for the guard.

This is the one place that knows how HA names, describes and answers its LLM tools, on
every release from ``hacs.json``'s minimum on (``docs/ha-compatibility.md``):

- names: up to 2026.8 a tool is named by itself (``HassTurnOn``, a script's object id);
  from 2026.9 by the integration that offers it and its name (``intent__HassTurnOn``,
  ``light__HassLightSet``, ``script__good_morning``), and a merged API prefixes each
  API's tools once more (``assist__...``, any release). ``tool_identity`` reads both.
- metadata: from 2026.10 a tool names its ``integration`` and carries ``annotations``
  (``read_only``, ``destructive``, ``idempotent``, ``open_world``); before, there are none.
- results: from 2026.10 ``async_call_tool`` returns a ``ToolResult(data, error)``; before,
  the JSON object itself (``tool_result_value``).
- schemas: ``agent.tool_schemas`` converts them with the library the running HA ships.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import voluptuous as vol
from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.core import HomeAssistant, State
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import intent, llm

from ..const import DOMAIN, LOGGER
from ..engine.errors import ToolExecutionError, ToolValidationError
from ..engine.guard.policy import Target
from ..engine.json_types import JSONObject, JSONValue
from ..engine.tools.contract import Policy, ToolContext, ToolSpec
from ..engine.tools.holding import HoldingHint
from ..engine.tools.registry import Tool
from ..engine.vision import CAMERA_TOOL
from .images import CAMERA_DOMAIN
from .tool_schemas import OPEN_OBJECT, SchemaConversionError, json_schema

ENTITY_SLOTS = ("name", "area", "floor", "domain", "device_class")
IDEMPOTENT_TOOLS = frozenset({"HassListAddItem", "HassShoppingListAddItem", "HassBroadcast"})
"""Tools tried again after a timeout where HA does not say (before 2026.10), by bare name."""
READ_ONLY_TOOLS = frozenset(
    {
        *("GetLiveContext", "GetDateTime", "calendar_get_events", "todo_get_items"),
        *("HassGetState", "HassGetWeather", "HassClimateGetTemperature"),
        *("HassGetCurrentDate", "HassGetCurrentTime"),
    }
)
"""HA's tools that only read where HA does not say (before 2026.10), by bare name; a persona
whose profile could not be read runs them at once and holds every other for a yes."""
SCRIPT = "script"
PREFIX = re.compile(r"(?P<integration>[a-z0-9]+(?:_[a-z0-9]+)*)__(?P<base>.+)")
"""``<domain>__<name>``: an integration's domain (HA's rule for domains), then the name."""
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


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolHints:
    """What HA says a tool does (``llm.ToolAnnotations``, 2026.10 on)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolIdentity:
    """Who offers an HA tool and what it does, whatever the release names it."""

    name: str
    """The name HA calls it by, and so the model."""
    base: str
    """The name without its integration's (and a merged API's) prefix: ``HassTurnOn``."""
    integration: str | None
    """The integration that offers it; None where neither HA nor the name says."""
    hints: ToolHints | None
    """HA's annotations; None before 2026.10."""

    @property
    def aliases(self) -> tuple[str, ...]:
        """Return the other names a person's rules may give the tool (its bare name)."""
        return (self.base,) if self.base != self.name else ()


def tool_identity(tool: llm.Tool) -> ToolIdentity:
    """Return who offers ``tool`` and what it does: from HA's metadata, else from its name.

    A merged API's tool (``NamespacedTool``) wraps the API's own: the inner tool says who
    offers it. Without ``integration`` (before 2026.10) one ``<domain>__`` prefix is taken
    off its name (2026.9's names), and a script tool is known by its class.
    """
    inner = tool
    while isinstance(wrapped := getattr(inner, "tool", None), llm.Tool):
        inner = wrapped
    integration = getattr(inner, "integration", None)
    base = inner.name
    if isinstance(integration, str) and integration:
        base = base.removeprefix(f"{integration}__")
    elif (match := PREFIX.fullmatch(base)) is not None:
        integration, base = match["integration"], match["base"]
    else:
        integration = None
    if isinstance(inner, llm.ScriptTool):
        integration = SCRIPT
    if integration == SCRIPT:
        base = base.removeprefix("_")  # a script whose object id starts with a digit
    return ToolIdentity(name=tool.name, base=base, integration=integration, hints=_hints(inner))


def _hints(tool: llm.Tool) -> ToolHints | None:
    """Return HA's annotations of ``tool``, or None where HA gives none.

    A flag HA leaves unsaid (or gives as anything but a bool) takes HA's own default, the
    least safe case: writes, destroys, not idempotent, reaches outside the house.
    """
    annotations = getattr(tool, "annotations", None)
    if annotations is None:
        return None

    def flag(name: str, least_safe: bool) -> bool:
        """Return one flag, or its least safe value."""
        value = getattr(annotations, name, None)
        return value if isinstance(value, bool) else least_safe

    return ToolHints(
        read_only=flag("read_only", False),
        destructive=flag("destructive", True),
        idempotent=flag("idempotent", False),
        open_world=flag("open_world", True),
    )


def tool_result_value(name: str, result: object) -> JSONObject:
    """Return what a tool answered as JSON data; raise for a result HA marks an error.

    From 2026.10 ``async_call_tool`` returns ``llm.ToolResult(data, error)``; before,
    the JSON object itself.
    """
    result_type = getattr(llm, "ToolResult", None)
    if result_type is None or not isinstance(result, result_type):
        return as_json_object(result)
    data = as_json_object(getattr(result, "data", None))
    if getattr(result, "error", False) is True:
        raise ToolExecutionError(f"{name} failed: {json.dumps(data, ensure_ascii=False)}")
    return data


class HassTurnTools:
    """One turn's view of HA: its exposed tools, their targets and the targets' state."""

    def __init__(self, hass: HomeAssistant, api: llm.APIInstance | None) -> None:
        """Bind to HA and the LLM API instance of this turn (None: no HA control)."""
        self.hass = hass
        self.api = api
        self._identities: dict[str, ToolIdentity] = {}

    def tools(self, marks: Mapping[str, Policy] | None = None) -> list[Tool]:
        """Return every tool of the API as an engine tool with a JSON Schema contract.

        ``marks`` are the persona's ``[policy]`` marks: they decide for a tool HA says may
        destroy or reach outside the house when our rules do not know its integration.
        """
        if self.api is None:
            return []
        intents = {handler.intent_type for handler in intent.async_get(self.hass)}
        unconverted: list[tuple[str, SchemaConversionError]] = []
        tools = [self._tool(tool, marks or {}, intents, unconverted) for tool in self.api.tools]
        if unconverted:
            LOGGER.warning(
                "%d tools are offered without their parameters' schema (%s): %s",
                len(unconverted),
                ", ".join(name for name, _ in unconverted[:10]),
                unconverted[-1][1],
            )
        return tools

    def _tool(
        self,
        tool: llm.Tool,
        marks: Mapping[str, Policy],
        intents: set[str],
        unconverted: list[tuple[str, SchemaConversionError]],
    ) -> Tool:
        """Wrap one HA tool; HA validates and runs it, the engine guards it."""
        api = self.api
        assert api is not None
        name = tool.name
        identity = self._identities[name] = tool_identity(tool)

        async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
            """Run the tool through the LLM API, as HA would."""
            try:
                result = await api.async_call_tool(llm.ToolInput(tool_name=name, tool_args=args))
            except vol.Invalid as err:
                raise ToolValidationError(f"{name}: {err}") from err
            except HomeAssistantError as err:
                raise ToolExecutionError(f"{name}: {err}") from err
            return tool_result_value(name, result)

        try:
            schema = json_schema(tool.parameters, api.custom_serializer)
        except SchemaConversionError as err:
            unconverted.append((name, err))
            schema = dict(OPEN_OBJECT)
        hints = identity.hints
        return Tool(
            spec=ToolSpec(name=name, description=tool.description or name, parameters=schema),
            handler=handler,
            idempotent=hints.idempotent if hints else identity.base in IDEMPOTENT_TOOLS,
            policy=_policy(identity, marks, intents),
            aliases=identity.aliases,
            read_only=hints.read_only if hints else identity.base in READ_ONLY_TOOLS,
            holding=self._holding(identity),
        )

    def _holding(self, identity: ToolIdentity) -> HoldingHint:
        """Say what a slow call is about: a camera's tool looks at one, any other the home."""
        if identity.integration == CAMERA_DOMAIN:
            return HoldingHint(kind="camera", target=self._camera_name)
        return HoldingHint(kind="home", target=_named_target)

    def _camera_name(self, args: JSONObject) -> str | None:
        """Return the name of the camera a call names (by entity id, or by name)."""
        entity_id = args.get("entity_id", args.get("camera"))
        if isinstance(entity_id, list):
            entity_id = entity_id[0] if entity_id else None
        if isinstance(entity_id, str) and entity_id.startswith(f"{CAMERA_DOMAIN}."):
            state = self.hass.states.get(entity_id)
            return None if state is None else state.name
        return _text(args.get("name"))

    async def resolve(self, tool_id: str, args: JSONObject, ctx: ToolContext) -> Sequence[Target]:
        """Return the exposed entities the call would act on, matched as HA's intents do.

        The camera tool acts on the camera it names (so a profile can mark one ``confirm``);
        a script tool on its script; a tool HA says only reads acts on nothing.
        """
        if tool_id == CAMERA_TOOL:
            camera = self.hass.states.get(str(args.get("camera", "")))
            return [] if camera is None else [_target(camera, "snapshot")]
        identity = self._identities.get(tool_id) or ToolIdentity(
            name=tool_id, base=tool_id, integration=None, hints=None
        )
        if identity.hints is not None and identity.hints.read_only:
            return []
        script = self.hass.states.get(f"{SCRIPT}.{identity.base}")
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
            assistant=self._assistant(),
        )
        if not constraints.has_constraints:
            return []
        result = intent.async_match_targets(self.hass, constraints, self._preferences())
        services = INTENT_SERVICES.get(identity.base, {})
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

    def _assistant(self) -> str:
        """Return the assistant whose exposed entities the API's tools act on, as HA's do."""
        assistant = self.api.llm_context.assistant if self.api is not None else None
        return assistant or CONVERSATION_DOMAIN

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


def _policy(identity: ToolIdentity, marks: Mapping[str, Policy], intents: set[str]) -> Policy:
    """Return a tool's own policy: confirm what HA says may destroy, from strangers.

    Our rules know intents (``intents``: what they act on is matched as HA's intents match
    it), scripts (the script is the target) and our own tools. A tool of any other
    integration that HA annotates destructive or open-world waits for the person, unless
    the persona's marks name it (by either name).
    """
    hints = identity.hints
    known = identity.integration in (SCRIPT, DOMAIN) or identity.base in intents
    if hints is None or hints.read_only or known:
        return "allow"
    if not (hints.destructive or hints.open_world):
        return "allow"
    return marks.get(identity.name) or marks.get(identity.base) or "confirm"


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


def _named_target(args: JSONObject) -> str | None:
    """Return what an intent's call names, as HA's intents match it: name, area, then floor."""
    name = _text(args.get("name"))
    if name is not None and name != "all":
        return name
    return _text(args.get("area")) or _text(args.get("floor"))


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
