"""The LLM tool platform: the companion's own tools for HA's Assist API and other agents.

From Home Assistant 2026.7 an integration offers LLM tools through an ``llm`` platform:
HA's ``llm`` component calls ``async_get_tools(hass, llm_context, api_id)`` and adds the
tools to its API, for any LLM agent and MCP client using it. Before 2026.7 HA never loads
this module. Our tools:

- ``companion_agent__recall_memories``: what the companion remembers about the speaking
  person and the household (read only);
- ``companion_agent__forget_memory``: forget one of those memories by id (destructive);
- ``companion_agent__look_at_camera``: what a camera exposed to the asking assistant shows,
  described by an AI task's vision model (read only).

Access follows the memory services' rules, narrowed to the speaking person: a turn with a
user reads and forgets only that user's memories and the household's; a turn without one
only the household's. Names carry our domain (HA's rule from 2026.9), and from 2026.10
each tool names its ``integration`` and carries ``annotations``; results are
``llm.ToolResult`` where HA has it. The companion's own personas have their memory built
in, so their turns are not offered these tools.
"""

from __future__ import annotations

import importlib
from typing import Any

import voluptuous as vol
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers import llm
from homeassistant.util.json import JsonObjectType, JsonValueType

from .agent.images import HassCameras
from .agent.roles import role_choices
from .const import DOMAIN, SUBENTRY_AI_TASK, SUBENTRY_CONVERSATION
from .engine.engine import TaskRequest
from .engine.errors import CompanionError
from .engine.memory import HOUSEHOLD, Forget, MemoryQuery, MemoryScope
from .engine.vision import ImageBounds
from .runtime import loaded

RECALL = f"{DOMAIN}__recall_memories"
FORGET = f"{DOMAIN}__forget_memory"
LOOK = f"{DOMAIN}__look_at_camera"
MAX_RECALLED = 10
LOOK_PROMPT = "Describe what this camera shows, briefly and plainly."
PROMPT = (
    f"Use {RECALL} to look up what the companion remembers about the person speaking; "
    f"{FORGET} forgets one of those memories by its id when they ask."
)


@callback
def async_get_tools(hass: HomeAssistant, llm_context: llm.LLMContext, api_id: str) -> Any:
    """Return the companion's tools for an LLM API (HA's ``llm`` platform, 2026.7 on)."""
    if llm_context.platform == DOMAIN or not loaded(hass):
        return None
    llm_platform = importlib.import_module("homeassistant.components.llm")  # 2026.7 on
    tools: list[llm.Tool] = [RecallMemories(), ForgetMemory(), LookAtCamera()]
    return llm_platform.LLMTools(tools=tools, prompt=PROMPT)


def _annotations(*, read_only: bool, destructive: bool, idempotent: bool) -> object | None:
    """Return HA's ``ToolAnnotations`` for a tool (2026.10 on); None before."""
    annotations = getattr(llm, "ToolAnnotations", None)
    if annotations is None:
        return None
    made: object = annotations(
        read_only=read_only, destructive=destructive, idempotent=idempotent, open_world=False
    )
    return made


def _result(data: JsonObjectType) -> Any:
    """Return ``data`` as the running HA wants a tool's result: a ``ToolResult`` from 2026.10."""
    result_type = getattr(llm, "ToolResult", None)
    return data if result_type is None else result_type(data=data)


def _owners(llm_context: llm.LLMContext) -> tuple[str, ...]:
    """Return whose memories the speaking person may use: theirs and the household's."""
    user_id = llm_context.context.user_id if llm_context.context is not None else None
    return (HOUSEHOLD,) if user_id is None else (f"user:{user_id}", HOUSEHOLD)


class CompanionTool(llm.Tool):
    """A tool of the companion's, named and annotated as the running HA expects."""

    title: str
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True

    def __init__(self) -> None:
        """Name the integration and set HA's annotations where HA has them."""
        self.integration = DOMAIN
        annotations = _annotations(
            read_only=self.read_only, destructive=self.destructive, idempotent=self.idempotent
        )
        if annotations is not None:
            self.annotations = annotations


class RecallMemories(CompanionTool):
    """What the companion remembers about the speaking person and the household."""

    name = RECALL
    title = "Recall memories"
    description = (
        "Search what the home's companion remembers about the person speaking and the "
        "household. Returns the matching memories with their ids."
    )
    parameters = vol.Schema({vol.Required("query"): cv.string})

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> Any:
        """Search every persona's memory in the scopes the speaking person may read."""
        query = str(tool_input.tool_args["query"])[:500]
        found: list[JsonValueType] = []
        for entry in loaded(hass):
            memory = entry.runtime_data.engine.memory
            if memory is None:
                continue
            scopes = tuple(
                MemoryScope(agent_id=sub.subentry_id, owner=owner, environment=memory.environment)
                for sub in entry.subentries.values()
                if sub.subentry_type == SUBENTRY_CONVERSATION
                for owner in _owners(llm_context)
            )
            try:
                hits = await memory.store.search(
                    MemoryQuery(text=query, scopes=scopes, limit=MAX_RECALLED)
                )
            except CompanionError as err:
                raise HomeAssistantError(f"the companion's memory did not answer: {err}") from err
            found.extend(
                {
                    "id": hit.record.id,
                    "text": hit.record.text,
                    "about": "household" if hit.record.scope.owner == HOUSEHOLD else "you",
                    "when": hit.record.valid_from.isoformat(),
                }
                for hit in hits
            )
        return _result({"memories": found[:MAX_RECALLED]})


class ForgetMemory(CompanionTool):
    """Forget one of the speaking person's (or the household's) memories by its id."""

    name = FORGET
    title = "Forget a memory"
    description = (
        "Forget one memory the home's companion keeps about the person speaking or the "
        "household, by the id the recall tool gave."
    )
    parameters = vol.Schema({vol.Required("memory_id"): cv.string})
    read_only = False
    destructive = True

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> Any:
        """Forget the memory if it is the speaking person's or the household's."""
        record_id = str(tool_input.tool_args["memory_id"])
        owners = _owners(llm_context)
        for entry in loaded(hass):
            memory = entry.runtime_data.engine.memory
            record = None if memory is None else await memory.get(record_id)
            if memory is None or record is None or record.scope.owner not in owners:
                continue
            removed = await memory.forget(
                Forget(record_id=record_id, environment=memory.environment)
            )
            return _result({"forgotten": removed})
        return _result({"forgotten": 0, "reason": "no such memory of yours"})


class LookAtCamera(CompanionTool):
    """Describe what a camera exposed to the asking assistant shows."""

    name = LOOK
    title = "Look at a camera"
    description = "Describe what a camera shows now. Give its entity id and, if any, a question."
    parameters = vol.Schema(
        {vol.Required("camera"): cv.string, vol.Optional("question"): cv.string}
    )

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> Any:
        """Take a snapshot and have an AI task's vision model describe it."""
        camera = str(tool_input.tool_args["camera"])
        assistant = llm_context.assistant or "conversation"
        if not camera.startswith("camera.") or not async_should_expose(hass, assistant, camera):
            raise HomeAssistantError(f"{camera} is not a camera exposed to this assistant")
        for entry in loaded(hass):
            task = next(
                (s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_AI_TASK),
                None,
            )
            if task is None:
                continue
            question = str(tool_input.tool_args.get("question") or LOOK_PROMPT)[:500]
            try:
                image = await HassCameras(hass).snapshot(camera, ImageBounds())
                answer = await entry.runtime_data.engine.generate(
                    TaskRequest(
                        name="look at camera",
                        instructions=question,
                        roles=role_choices(task.data),
                        images=(image,),
                    )
                )
            except CompanionError as err:
                raise HomeAssistantError(f"could not look at {camera}: {err}") from err
            return _result({"camera": camera, "description": answer.text})
        raise HomeAssistantError("the companion has no AI task to look with")
