"""The sensor platform: each persona's current emotion."""

from __future__ import annotations

from homeassistant.components.sensor import SensorEntity
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.device_registry import DeviceInfo
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.restore_state import RestoreEntity

from .const import DOMAIN, SUBENTRY_CONVERSATION, signal_emotion
from .runtime import CompanionConfigEntry


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add an emotion sensor for each persona."""
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
