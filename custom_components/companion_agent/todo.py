"""The to-do platform: what each persona remembers, as a list people can see and prune.

One list per persona; its items are the persona's current *household* conclusions
(``topic → conclusion``): what it holds for everyone in the home. A to-do list's items are
shown to every HA user, so a person's own conclusions are not listed here (they would be
read by everyone); a person sees and prunes theirs with the ``export_memories``,
``forget`` and ``rollback_memory`` actions, which check who calls. Deleting an item forgets
it, adding an item remembers it as a household conclusion (its own, unless it says the same
as one there: ``statement_topic``), renaming an item supersedes the conclusion (the old one
stays in its history and can be rolled back).

The list is not exposed to Assist unless the user exposes it (it is turned off once, when
it first appears): an assistant's to-do tools could otherwise write household memories
unasked. Every write says where it came from: ``todo`` through the list's actions (the HA
user who called), ``tool`` when it came without a service call (an assistant's to-do intent).
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import timedelta

from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.components.todo import TodoItem, TodoListEntity
from homeassistant.components.todo.const import TodoItemStatus, TodoListEntityFeature
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import entity_registry as er
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
    Provenance,
    statement_topic,
)
from .runtime import CompanionConfigEntry, add_per_subentry

SCAN_INTERVAL = timedelta(minutes=1)
MAX_ITEMS = 200
ASSIST = "conversation"
EXPOSURE_SET = "assist_exposure_set"
"""The list's own registry option: its Assist exposure was set once (the user's rules after)."""
HA_CORE = "homeassistant"
"""HA's core integration: once it is set up, entities' Assist exposure can be changed."""


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
        self._handled: float | None = None
        """When the service call last written through was made (``_context_set``)."""

    @property
    def memory(self) -> CompanionMemory:
        """Return the entry's memory (the list exists only while it does)."""
        memory = self.entry.runtime_data.engine.memory
        if memory is None:
            raise ServiceValidationError(translation_domain=DOMAIN, translation_key="memory_off")
        return memory

    async def async_added_to_hass(self) -> None:
        """Keep the list from Assist (once), read the conclusions, follow changes by hand."""
        await super().async_added_to_hass()
        self._async_hide_from_assist()
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_memory_changed(self.entry.entry_id), self._async_changed
            )
        )

    @callback
    def _async_hide_from_assist(self) -> None:
        """Turn the list's Assist exposure off the first time it appears; never again after.

        A user who exposes it later keeps their choice: the list marks in its registry
        options that it did this once.
        """
        registry = er.async_get(self.hass)
        entry = registry.async_get(self.entity_id)
        if entry is None or HA_CORE not in self.hass.config.components:  # exposure set up
            return
        if dict(entry.options.get(DOMAIN) or {}).get(EXPOSURE_SET):
            return
        async_expose_entity(self.hass, ASSIST, self.entity_id, False)
        registry.async_update_entity_options(self.entity_id, DOMAIN, {EXPOSURE_SET: True})

    def _provenance(self) -> Provenance:
        """Return where a write comes from: the list's actions (``todo``), or a ``tool``.

        HA sets an entity's context right before a service call reaches it; a write that
        finds no context set since the last one came another way (an assistant's intent).
        """
        stamp, context = self._context_set, self._context
        if stamp is None or context is None or stamp == self._handled:
            return Provenance(via="tool")
        self._handled = stamp
        return Provenance(via="todo", person=context.user_id)

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
        """Remember a new household conclusion, its own unless it says what one there says."""
        text = (item.summary or "").strip()
        if not text:
            raise ServiceValidationError(translation_domain=DOMAIN, translation_key="empty_memory")
        scope = self._scope(self.memory, HOUSEHOLD)
        origin = self._provenance()
        await self._call(
            self.memory.remember(
                scope, text, topic=statement_topic(text), source=origin.via, provenance=origin
            )
        )

    async def async_update_todo_item(self, item: TodoItem) -> None:
        """Supersede the conclusion with the item's new text (same topic and owner).

        The conclusion is read again first: one forgotten meanwhile is not brought back.
        """
        origin = self._provenance()
        shown = self._records.get(item.uid or "")
        record = None if shown is None else await self.memory.get(shown.id)
        if record is None or not record.current:
            raise ServiceValidationError(
                translation_domain=DOMAIN, translation_key="memory_not_found"
            )
        text = (item.summary or "").strip()
        if text and text != record.text:
            topic = record.topic or statement_topic(text)
            await self._call(
                self.memory.remember(
                    record.scope, text, topic=topic, source=origin.via, provenance=origin
                )
            )

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
