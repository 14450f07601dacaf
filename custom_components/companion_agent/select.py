"""The selects of each satellite: its *Assistant* (pipeline) and *Finished speaking detection*.

They are Assist's own selects (``assist_pipeline.select``), on the satellite's device, as
Home Assistant's Wyoming integration offers them: the satellite's runs use the pipeline the
first names (the preferred one by default) and the silence the second sets for the end of
speech, which Home Assistant detects (every Wyoming satellite streams its microphone and
leaves the end of speech to Home Assistant).
"""

from __future__ import annotations

# From the module itself: assist_pipeline exports the two classes only since HA 2025.11.
from homeassistant.components.assist_pipeline.select import (
    AssistPipelineSelect,
    VadSensitivitySelect,
)
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .assist_satellite import satellite_device
from .const import DOMAIN, SUBENTRY_SATELLITE
from .runtime import CompanionConfigEntry


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the two selects of each satellite subentry, under that subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_SATELLITE:
            async_add_entities(
                [
                    SatellitePipelineSelect(hass, subentry),
                    SatelliteVadSensitivitySelect(hass, subentry),
                ],
                config_subentry_id=subentry.subentry_id,
            )


class SatellitePipelineSelect(AssistPipelineSelect):
    """Which Assist pipeline the satellite's runs use."""

    _attr_has_entity_name = True

    def __init__(self, hass: HomeAssistant, subentry: ConfigSubentry) -> None:
        """Select for the satellite of ``subentry``."""
        super().__init__(hass, DOMAIN, subentry.subentry_id)
        self._attr_device_info = satellite_device(subentry)


class SatelliteVadSensitivitySelect(VadSensitivitySelect):
    """How long a silence ends the person's speech on the satellite."""

    _attr_has_entity_name = True

    def __init__(self, hass: HomeAssistant, subentry: ConfigSubentry) -> None:
        """Select for the satellite of ``subentry``."""
        super().__init__(hass, subentry.subentry_id)
        self._attr_device_info = satellite_device(subentry)
