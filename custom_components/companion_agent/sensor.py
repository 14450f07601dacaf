"""The sensor platform: each persona's emotion, and the tokens and tool calls used."""

from __future__ import annotations

from homeassistant.components.sensor import SensorEntity, SensorStateClass
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.restore_state import RestoreEntity

from .const import DOMAIN, SIGNAL_USAGE, SUBENTRY_CONVERSATION, signal_emotion
from .runtime import CompanionConfigEntry


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add an emotion sensor for each persona, and the entry's usage sensors."""
    async_add_entities([UsageSensor(entry, "total_tokens"), UsageSensor(entry, "calls")])
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_CONVERSATION:
            async_add_entities([EmotionSensor(subentry)], config_subentry_id=subentry.subentry_id)


class EmotionSensor(SensorEntity, RestoreEntity):
    """The emotion the persona showed last, for automations (lights, screens)."""

    _attr_has_entity_name = True
    _attr_translation_key = "emotion"
    _attr_should_poll = False

    def __init__(self, subentry: ConfigSubentry) -> None:
        """Attach the sensor to the persona's device."""
        self._persona_id = subentry.subentry_id
        self._attr_unique_id = f"{subentry.subentry_id}_emotion"
        self._attr_device_info = DeviceInfo(identifiers={(DOMAIN, subentry.subentry_id)})
        self._attr_native_value = "neutral"

    async def async_added_to_hass(self) -> None:
        """Restore the last emotion and follow new ones."""
        await super().async_added_to_hass()
        if (last := await self.async_get_last_state()) is not None and last.state:
            self._attr_native_value = last.state
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_emotion(self._persona_id), self._async_emotion
            )
        )

    @callback
    def _async_emotion(self, emotion: str) -> None:
        """Show a new emotion."""
        self._attr_native_value = emotion
        self.async_write_ha_state()


class UsageSensor(SensorEntity):
    """Tokens or tool calls the companion used since Home Assistant started."""

    _attr_has_entity_name = True
    _attr_should_poll = False
    _attr_state_class = SensorStateClass.TOTAL_INCREASING

    def __init__(self, entry: CompanionConfigEntry, field: str) -> None:
        """Count ``field`` (total_tokens or calls) of the entry's usage counters."""
        self._entry = entry
        self._field = field
        self._attr_translation_key = field
        self._attr_unique_id = f"{entry.entry_id}_{field}"
        self._attr_device_info = DeviceInfo(
            identifiers={(DOMAIN, entry.entry_id)},
            name=entry.title,
            manufacturer="Companion Agent",
            entry_type=DeviceEntryType.SERVICE,
        )

    @property
    def native_value(self) -> int:
        """Return the running total."""
        return int(getattr(self._entry.runtime_data.engine.usage.total, self._field))

    @property
    def extra_state_attributes(self) -> dict[str, object]:
        """Break the total down by tool and by user."""
        snapshot = self._entry.runtime_data.engine.usage.snapshot()
        attributes: dict[str, object] = {}
        for group, label in (("tools", "by_tool"), ("users", "by_user")):
            values = snapshot.get(group)
            if isinstance(values, dict):
                attributes[label] = {
                    name: tally.get(self._field)
                    for name, tally in values.items()
                    if isinstance(tally, dict) and tally.get(self._field)
                }
        return attributes

    async def async_added_to_hass(self) -> None:
        """Refresh after every turn."""
        self.async_on_remove(
            async_dispatcher_connect(self.hass, SIGNAL_USAGE, self.async_write_ha_state)
        )
