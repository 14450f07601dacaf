"""The to-do platform: what each persona remembers, as a list people can see and prune.

One list per persona; its items are the persona's current *household* conclusions
(``topic → conclusion``): what it holds for everyone in the home. A to-do list's items are
shown to every HA user, so a person's own conclusions are not listed here (they would be
read by everyone); a person sees and prunes theirs with the ``export_memories``,
``forget`` and ``rollback_memory`` actions, which check who calls. Deleting an item forgets
it, adding an item remembers it as a household conclusion, renaming an item supersedes the
conclusion (the old one stays in its history and can be rolled back).
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import timedelta

from homeassistant.components.todo import TodoItem, TodoListEntity
from homeassistant.components.todo.const import TodoItemStatus, TodoListEntityFeature
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers.device_registry import DeviceInfo
from homeassistant.helpers.dispatcher import async_dispatcher_connect, async_dispatcher_send
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import DOMAIN, LOGGER, SUBENTRY_CONVERSATION, signal_memory_changed
from .engine.memory import (
    HOUSEHOLD,
    CompanionMemory,
    Forget,
    MemoryRecord,
    MemoryScope,
    instruction_topic,
)
from .runtime import CompanionConfigEntry, add_per_subentry

SCAN_INTERVAL = timedelta(minutes=1)
MAX_ITEMS = 200


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one memory list per persona (none when memory is off)."""
    if entry.runtime_data.engine.memory is not None:
        add_per_subentry(entry, SUBENTRY_CONVERSATION, PersonaMemoryList, async_add_entities)


class PersonaMemoryList(TodoListEntity):
    """A persona's current household conclusions, one item each."""

    _attr_has_entity_name = True
    _attr_translation_key = "memories"
    _attr_supported_features = (
        TodoListEntityFeature.CREATE_TODO_ITEM
        | TodoListEntityFeature.UPDATE_TODO_ITEM
        | TodoListEntityFeature.DELETE_TODO_ITEM
    )

    def __init__(self, entry: CompanionConfigEntry, subentry: ConfigSubentry) -> None:
        """Attach the list to the persona's device."""
        self.entry = entry
        self._persona_id = subentry.subentry_id
        self._attr_unique_id = f"{subentry.subentry_id}_memories"
        self._attr_device_info = DeviceInfo(identifiers={(DOMAIN, subentry.subentry_id)})
        self._attr_todo_items = []
        self._records: dict[str, MemoryRecord] = {}

    @property
    def memory(self) -> CompanionMemory:
        """Return the entry's memory (the list exists only while it does)."""
        memory = self.entry.runtime_data.engine.memory
        if memory is None:
            raise ServiceValidationError(translation_domain=DOMAIN, translation_key="memory_off")
        return memory

    async def async_added_to_hass(self) -> None:
        """Read the conclusions and follow changes made by hand."""
        await super().async_added_to_hass()
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_memory_changed(self.entry.entry_id), self._async_changed
            )
        )

    @callback
    def _async_changed(self) -> None:
        """Read the conclusions again."""
        self.async_schedule_update_ha_state(force_refresh=True)

    async def async_update(self) -> None:
        """Read the persona's current household conclusions (never a person's own)."""
        memory = self.entry.runtime_data.engine.memory
        if memory is None:
            return
        try:
            states = await memory.conclusions(self._scope(memory, HOUSEHOLD))
        except Exception as err:  # a store that does not answer keeps the list
            LOGGER.debug("Memory list not refreshed: %s", err)
            return
        states = states[:MAX_ITEMS]
        self._records = {record.id: record for record in states}
        self._attr_todo_items = [
            TodoItem(
                uid=record.id,
                summary=record.text,
                status=TodoItemStatus.NEEDS_ACTION,
                description=record.topic or None,
            )
            for record in states
        ]

    async def async_create_todo_item(self, item: TodoItem) -> None:
        """Remember a new household conclusion; its topic is its first words."""
        text = (item.summary or "").strip()
        if not text:
            raise ServiceValidationError(translation_domain=DOMAIN, translation_key="empty_memory")
        scope = self._scope(self.memory, HOUSEHOLD)
        await self._call(self.memory.remember(scope, text, topic=instruction_topic(text) or text))

    async def async_update_todo_item(self, item: TodoItem) -> None:
        """Supersede the conclusion with the item's new text (same topic and owner)."""
        record = self._records.get(item.uid or "")
        if record is None:
            raise ServiceValidationError(
                translation_domain=DOMAIN, translation_key="memory_not_found"
            )
        text = (item.summary or "").strip()
        if text and text != record.text:
            await self._call(self.memory.remember(record.scope, text, topic=record.topic or text))

    async def async_delete_todo_items(self, uids: list[str]) -> None:
        """Forget the conclusions, with their history."""
        memory = self.memory
        for uid in uids:
            if uid not in self._records:  # only what this list shows
                raise ServiceValidationError(
                    translation_domain=DOMAIN, translation_key="memory_not_found"
                )
            await self._call(memory.forget(Forget(record_id=uid, environment=self._env(memory))))

    async def _call(self, call: Awaitable[object]) -> None:
        """Await a memory call, translate its failure, and tell every list to refresh."""
        try:
            await call
        except HomeAssistantError:
            raise
        except Exception as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="memory_unavailable",
                translation_placeholders={"error": type(err).__name__},
            ) from err
        async_dispatcher_send(self.hass, signal_memory_changed(self.entry.entry_id))

    def _scope(self, memory: CompanionMemory, owner: str) -> MemoryScope:
        """Return this persona's scope for ``owner``."""
        return MemoryScope(agent_id=self._persona_id, owner=owner, environment=self._env(memory))

    @staticmethod
    def _env(memory: CompanionMemory) -> str:
        """Return the memory's environment tag."""
        return memory.settings.environment
