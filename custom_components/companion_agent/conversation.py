"""The conversation platform: one agent per persona subentry, streaming into the ChatLog."""

from __future__ import annotations

from typing import Literal

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, MATCH_ALL
from homeassistant.core import HomeAssistant
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util.ulid import ulid_now

from . import CompanionConfigEntry
from .chat_stream import ChatLogStream
from .const import (
    CONF_MAX_ROUNDS,
    CONF_MODEL,
    CONF_PROMPT,
    DEFAULT_MAX_ROUNDS,
    DOMAIN,
    LOGGER,
    SUBENTRY_CONVERSATION,
)
from .engine.core import AgentCore
from .engine.messages import ChatMessage, SystemMessage, UserMessage
from .engine.tools.contract import ToolContext


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one conversation agent per persona."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_CONVERSATION:
            async_add_entities(
                [CompanionConversationEntity(entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


class CompanionConversationEntity(conversation.ConversationEntity):
    """A persona that answers through the engine, streaming as it thinks."""

    _attr_has_entity_name = True
    _attr_name = None
    _attr_supports_streaming = True

    def __init__(self, entry: CompanionConfigEntry, subentry: ConfigSubentry) -> None:
        """Bind the entity to its entry and persona."""
        self.entry = entry
        self.subentry = subentry
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="Companion Agent",
            model=entry.data[CONF_MODEL],
            entry_type=DeviceEntryType.SERVICE,
        )
        if subentry.data.get(CONF_LLM_HASS_API):
            self._attr_supported_features = conversation.ConversationEntityFeature.CONTROL

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """Answer in any language the model speaks."""
        return MATCH_ALL

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Run one turn through the engine and stream it into the ChatLog."""
        try:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                self.subentry.data.get(CONF_LLM_HASS_API),
                self.subentry.data.get(CONF_PROMPT),
                user_input.extra_system_prompt,
            )
        except conversation.ConverseError as err:
            return err.as_conversation_result()
        runtime = self.entry.runtime_data
        storage = runtime.shelf(self.subentry.subentry_id).get(chat_log.conversation_id)
        system = chat_log.content[0]
        prompt = system.content if isinstance(system, conversation.SystemContent) else ""
        messages: list[ChatMessage] = [
            SystemMessage(content=prompt),
            *await storage.load(),
            UserMessage(content=user_input.text),
        ]
        ctx = ToolContext(
            conversation_id=chat_log.conversation_id,
            user_id=user_input.context.user_id,
            trace_id=ulid_now(),
            language=user_input.language,
            agent_id=self.subentry.subentry_id,
        )
        core = AgentCore(
            runtime.model,
            runtime.tools,
            max_rounds=int(self.subentry.data.get(CONF_MAX_ROUNDS, DEFAULT_MAX_ROUNDS)),
        )
        stream = ChatLogStream(core.run_turn(messages, ctx))
        async for _content in chat_log.async_add_delta_content_stream(
            self.entity_id, stream.deltas()
        ):
            pass
        answer = stream.result.text if stream.result else ""
        LOGGER.debug("Turn %s finished", ctx.trace_id)
        self.entry.async_create_background_task(
            self.hass, storage.append_turn(user_input.text, answer), f"{DOMAIN} store turn"
        )
        return conversation.async_get_result_from_chat_log(user_input, chat_log)
