"""HA's LLM tools as Home Assistant 2026.9 and 2026.10 shape them, emulated on 2026.2.3.

Neither release installs here, so their shapes are rebuilt from their sources around the
real tools of this HA's Assist API, and registered as an LLM API of its own:

- 2026.9 (core PR 179938, "Require LLM tool names to be prefixed with the offering
  integration's domain"): every tool is named ``<domain>__<name>`` by the integration that
  offers it: ``intent__HassTurnOn``, ``light__HassLightSet``, ``script__<object id>``,
  ``homeassistant__GetLiveContext``.
- 2026.10 (core PRs 182487, 182538 and 182551; the developer blog's "LLM tools return a
  ToolResult and declare their integration", 26 September 2026): ``APIInstance.
  async_call_tool`` returns ``llm.ToolResult(data, error=False)``; a tool carries
  ``integration``, ``title`` and ``annotations`` (``llm.ToolAnnotations``: ``read_only``,
  ``destructive``, ``idempotent``, ``open_world``, defaulting to the least safe case).

``ToolResult`` and ``ToolAnnotations`` are set on HA's ``helpers.llm`` module for the test
(the ``emulate_2026_10`` fixture), as 2026.10 has them there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import voluptuous as vol
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.util.json import JsonObjectType

type Release = Literal["2026.9", "2026.10"]


@dataclass(slots=True)
class ToolResult:
    """``homeassistant.helpers.llm.ToolResult`` of 2026.10, as the developer blog gives it."""

    data: JsonObjectType
    error: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAnnotations:
    """``homeassistant.helpers.llm.ToolAnnotations`` of 2026.10: the least safe by default."""

    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True


READ_ONLY = ToolAnnotations(read_only=True, destructive=False, idempotent=True, open_world=False)


def integration_of(tool: llm.Tool) -> str:
    """Return the integration that offers one of this HA's Assist tools, as 2026.9 names it."""
    if isinstance(tool, llm.ScriptTool):
        return "script"
    if isinstance(tool, llm.IntentTool):
        return "light" if tool.name == "HassLightSet" else "intent"
    return "homeassistant"


class ReleaseTool(llm.Tool):
    """One tool as the release names and describes it; it runs the real tool inside."""

    def __init__(
        self,
        inner: llm.Tool,
        release: Release,
        integration: str,
        annotations: ToolAnnotations | None = None,
    ) -> None:
        """Wrap ``inner`` as ``release`` offers it."""
        self._inner = inner
        base = inner.name.removeprefix("_") if integration == "script" else inner.name
        self.name = f"{integration}__{base}"
        self.description = inner.description
        self.parameters = inner.parameters
        if release == "2026.10":
            self.integration = integration
            self.title = base
            self.annotations = annotations or ToolAnnotations()

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """Run the real tool under its own name."""
        inner_input = llm.ToolInput(tool_name=self._inner.name, tool_args=tool_input.tool_args)
        return await self._inner.async_call(hass, inner_input, llm_context)


class FixedTool(llm.Tool):
    """A tool of another integration that answers what it is given (it touches nothing)."""

    def __init__(
        self,
        name: str,
        answer: Callable[[dict[str, Any]], JsonObjectType | ToolResult],
        annotations: ToolAnnotations,
        parameters: vol.Schema | None = None,
    ) -> None:
        """Name it ``<integration>__<name>``, with the annotations HA would carry."""
        self.name = name
        self.integration = name.split("__", 1)[0]
        self.description = f"The {name} tool"
        self.parameters = parameters or vol.Schema({vol.Optional("name"): str})
        self.annotations = annotations
        self._answer = answer
        self.calls: list[dict[str, Any]] = []

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> Any:
        """Record the call and answer."""
        self.calls.append(tool_input.tool_args)
        return self._answer(tool_input.tool_args)


@dataclass
class ReleaseAPIInstance(llm.APIInstance):
    """An API instance whose ``async_call_tool`` answers as 2026.10's: a ``ToolResult``."""

    wraps_results: bool = False

    async def async_call_tool(self, tool_input: llm.ToolInput) -> Any:
        """Call the tool; wrap a plain JSON object in a ``ToolResult`` (2026.10)."""
        result: Any = await super().async_call_tool(tool_input)
        if self.wraps_results and not isinstance(result, ToolResult):
            return ToolResult(data=result)
        return result


class ReleaseAPI(llm.API):
    """This HA's Assist API, its tools as ``release`` offers them, and a few of other kinds."""

    def __init__(
        self, hass: HomeAssistant, release: Release, extra: tuple[llm.Tool, ...] = ()
    ) -> None:
        """Register under ``assist_<release>``."""
        super().__init__(hass=hass, id=f"assist_{release}", name=f"Assist {release}")
        self.release = release
        self.extra = extra

    async def async_get_api_instance(self, llm_context: llm.LLMContext) -> llm.APIInstance:
        """Return Assist's instance with the release's tools."""
        assist = await llm.async_get_api(self.hass, llm.LLM_API_ASSIST, llm_context)
        tools: list[llm.Tool] = [
            ReleaseTool(
                tool,
                self.release,
                integration_of(tool),
                READ_ONLY if tool.name == "GetLiveContext" else None,
            )
            for tool in assist.tools
        ]
        return ReleaseAPIInstance(
            api=self,
            api_prompt=assist.api_prompt,
            llm_context=llm_context,
            tools=[*tools, *self.extra],
            custom_serializer=assist.custom_serializer,
            wraps_results=self.release == "2026.10",
        )
