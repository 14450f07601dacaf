"""Who is home, as proactive plugins see it, from HA's ``zone.home``, ``person`` and an option."""

from __future__ import annotations

from homeassistant.core import HomeAssistant

from custom_components.companion_agent.const import CONF_ASLEEP_ENTITY
from custom_components.companion_agent.engine.proactive import Presence
from tests.ha.common import SetupCompanion


async def test_presence_follows_zone_home_people_and_the_asleep_option(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    """zone.home counts first; without it a person at home counts; the option means asleep."""
    entry = await setup_companion(options={CONF_ASLEEP_ENTITY: "input_boolean.sleeping"})
    probe = entry.runtime_data.engine.settings.host.presence
    assert probe is not None

    hass.states.async_set("person.anna", "not_home")
    assert probe.presence() == Presence(someone_home=False)
    hass.states.async_set("person.anna", "home")
    assert probe.presence() == Presence(someone_home=True)
    hass.states.async_set("zone.home", "0")  # the zone's count wins over the person
    assert probe.presence() == Presence(someone_home=False)
    hass.states.async_set("zone.home", "2")
    hass.states.async_set("input_boolean.sleeping", "on")
    assert probe.presence() == Presence(someone_home=True, asleep=True)
    hass.states.async_set("input_boolean.sleeping", "off")
    assert probe.presence().can_listen
    assert await hass.config_entries.async_unload(entry.entry_id)
