"""The AI task platform: one entity per AI task sub-entry, answering through the engine.

``ai_task.generate_data`` reaches the entity with instructions, maybe a structure and
attachments; a task an integration starts may carry an LLM API (``GenDataTask.llm_api``,
HA 2025.9 on), whose tools the task calls through the same guard as a conversation.
Image attachments go to the model that sees images (the task's chat model if it does,
else its vision model); other attachments are refused. A structure becomes a JSON Schema
(converted as HA's own LLM integrations do, ``agent.tool_schemas``; its objects closed as
the structure is, an entity selector's domains as a pattern of entity ids) the answer must
fit, formats included; then the structure's own schema is called on the answer, as HA calls
a service's schema on its data. An answer that fails either is an error, as is a text
answer that was cut or is too long: never a wrong or shortened result.
Each task has a conversation trace of its own with every model call's tokens and timings.
"""

from __future__ import annotations

import json
from typing import Any

import voluptuous as vol
from homeassistant.components import ai_task, conversation
from homeassistant.components.conversation.trace import (
    ConversationTraceEvent,
    ConversationTraceEventType,
    async_conversation_trace,
)
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm, selector
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .agent.chat_stream import trace_to
from .agent.ha_tools import HassTurnTools
from .agent.images import async_read_image
from .agent.roles import role_choices
from .agent.tool_schemas import SchemaConversionError, Serializer, structure_schema
from .const import CONF_MODEL, DOMAIN, SUBENTRY_AI_TASK
from .engine.engine import TaskRequest, TaskTools
from .engine.errors import ImageRefusedError, TaskError
from .engine.json_types import JSONObject, JSONValue
from .engine.tools.contract import ToolContext
from .engine.vision import ImageBounds, ImagePart
from .runtime import CompanionConfigEntry, add_per_subentry, subentry_device

MAX_ATTACHMENTS = 8
BOUNDS = ImageBounds()


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one AI task entity per AI task sub-entry."""
    add_per_subentry(entry, SUBENTRY_AI_TASK, CompanionTaskEntity, async_add_entities)


class CompanionTaskEntity(ai_task.AITaskEntity):
    """Generate data (text or structured, from images too) with the companion's models."""

    _attr_has_entity_name = True
    _attr_name = None

    def __init__(self, entry: CompanionConfigEntry, subentry: ConfigSubentry) -> None:
        """Bind the entity to its entry and sub-entry; attachments only if it can see."""
        self.entry = entry
        self.subentry = subentry
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = subentry_device(subentry, entry.data[CONF_MODEL])
        roles = role_choices(subentry.data)
        self._attr_supported_features = ai_task.AITaskEntityFeature.GENERATE_DATA
        if roles.chat_sees_images or roles.vision.model:
            self._attr_supported_features |= ai_task.AITaskEntityFeature.SUPPORT_ATTACHMENTS

    async def _async_generate_data(
        self, task: ai_task.GenDataTask, chat_log: conversation.ChatLog
    ) -> ai_task.GenDataTaskResult:
        """Answer the task through the engine, in a trace of its own."""
        with async_conversation_trace() as trace:
            trace.add_event(
                ConversationTraceEvent(
                    ConversationTraceEventType.ASYNC_PROCESS,
                    {"task_name": task.name, "entity_id": self.entity_id},
                )
            )
            system = chat_log.content[0]
            request = TaskRequest(
                name=task.name,
                instructions=task.instructions,
                roles=role_choices(self.subentry.data),
                images=await self._async_images(task.attachments or []),
                schema=None if task.structure is None else _schema(task.structure, chat_log),
                system=system.content if isinstance(system, conversation.SystemContent) else "",
                on_model_call=trace_to(chat_log),
                tools=self._tools(chat_log),
            )
            try:
                result = await self.entry.runtime_data.engine.generate(request)
            except TaskError as err:
                raise HomeAssistantError(
                    translation_domain=DOMAIN,
                    translation_key=f"task_{err.reason}",
                    translation_placeholders={"detail": str(err)},
                ) from err
            if task.structure is not None:
                _check_answer(task.structure, result.data)
            text = result.text or json.dumps(result.data, ensure_ascii=False)
            chat_log.async_add_assistant_content_without_tools(
                conversation.AssistantContent(agent_id=self.entity_id, content=text)
            )
            trace.set_result(model=result.model)
        return ai_task.GenDataTaskResult(conversation_id=chat_log.conversation_id, data=result.data)

    def _tools(self, chat_log: conversation.ChatLog) -> TaskTools | None:
        """Return the tools of the task's LLM API behind the guard; None: it has none."""
        if chat_log.llm_api is None:
            return None
        house = HassTurnTools(self.hass, chat_log.llm_api)
        return TaskTools(
            tools=house.tools(),
            context=ToolContext(
                conversation_id=chat_log.conversation_id,
                user_id=chat_log.llm_api.llm_context.context.user_id
                if chat_log.llm_api.llm_context.context is not None
                else None,
                trace_id=chat_log.conversation_id,
                language=self.hass.config.language,
                agent_id=self.subentry.subentry_id,
            ),
            resolver=house,
            state=house,
        )

    async def _async_images(
        self, attachments: list[conversation.Attachment]
    ) -> tuple[ImagePart, ...]:
        """Read the image attachments, fit to the engine's bounds; refuse any other kind."""
        if len(attachments) > MAX_ATTACHMENTS:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="task_too_many_attachments",
                translation_placeholders={"limit": str(MAX_ATTACHMENTS)},
            )
        images: list[ImagePart] = []
        for attachment in attachments:
            name = attachment.media_content_id
            if not attachment.mime_type.startswith("image/"):
                raise HomeAssistantError(
                    translation_domain=DOMAIN,
                    translation_key="task_attachment_not_image",
                    translation_placeholders={"name": name, "type": attachment.mime_type},
                )
            try:
                images.append(await async_read_image(self.hass, attachment.path, name, BOUNDS))
            except ImageRefusedError as err:
                raise HomeAssistantError(
                    translation_domain=DOMAIN,
                    translation_key="task_image_refused",
                    translation_placeholders={"detail": str(err)},
                ) from err
        return tuple(images)


def _schema(structure: object, chat_log: conversation.ChatLog) -> JSONObject:
    """Return the task's structure (selectors included) as a JSON Schema, as HA converts it."""
    api = chat_log.llm_api
    serializer = api.custom_serializer if api is not None else llm.selector_serializer
    try:
        return structure_schema(
            structure, None if serializer is None else _with_entity_domains(serializer)
        )
    except SchemaConversionError as err:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="task_structure_unsupported",
            translation_placeholders={"detail": str(err)},
        ) from err


def _with_entity_domains(serializer: Serializer) -> Serializer:
    """Return ``serializer`` that also gives an entity selector's domains as a pattern.

    HA's serializer says only ``entity_id``; the selector checks a legacy ``domain`` itself,
    but not a ``filter``'s, which only the frontend reads. As a pattern, the domains reach
    the model and the answer is held to them.
    """

    def serialize(schema: Any) -> Any:
        """Serialize as HA does; add the pattern of the entity ids an entity selector takes."""
        result = serializer(schema)
        if not isinstance(schema, selector.EntitySelector) or not isinstance(result, dict):
            return result
        if not (domains := _entity_domains(schema.config)):
            return result
        pattern = rf"^(?:{'|'.join(sorted(domains))})\.[a-z0-9_]+$"
        items = result.get("items")
        if result.get("type") == "array" and isinstance(items, dict):
            return {**result, "items": {**items, "pattern": pattern}}
        return {**result, "pattern": pattern}

    return serialize


def _entity_domains(config: selector.EntitySelectorConfig) -> set[str]:
    """Return the domains an entity selector takes entities of (empty: any domain).

    A ``filter`` restricts the domain only when each of its filters names domains.
    """
    legacy = set(_names(config.get("domain")))
    filters = config.get("filter")
    rules = [filters] if isinstance(filters, dict) else list(filters or [])
    if rules and all(rule.get("domain") for rule in rules):
        filtered = {domain for rule in rules for domain in _names(rule.get("domain"))}
        return legacy & filtered if legacy else filtered
    return legacy


def _names(value: str | list[str] | None) -> list[str]:
    """Return a selector option that is one name or a list of names, as a list."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _check_answer(structure: vol.Schema, data: JSONValue) -> None:
    """Call the structure's own schema on the answer, as HA calls a service's on its data.

    It holds what the JSON Schema cannot say: a selector's own checks (a date that parses,
    an entity of the allowed domains, a number in range).
    """
    try:
        structure(data)
    except vol.Invalid as err:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="task_bad_answer",
            translation_placeholders={"detail": str(err)},
        ) from err
