"""Adding a Wyoming satellite: the sub-entry flow, and zeroconf's discovery, through a real HA.

Each is checked live against real sockets: the scripted satellite answers as a satellite,
the scripted ASR server as something else, a closed port not at all.
"""

from __future__ import annotations

from ipaddress import ip_address

from homeassistant import config_entries
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers.service_info.zeroconf import ZeroconfServiceInfo
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_AREA,
    CONF_ZEROCONF_NAME,
    DOMAIN,
    SUBENTRY_SATELLITE,
)
from tests.ha.common import SetupCompanion, closed_port, persona, satellite
from tests.support.asr_server import ScriptedAsrServer
from tests.support.satellite_script import ScriptedSatellite

SERVICE = "_wyoming._tcp.local."


def satellites(entry: MockConfigEntry) -> list[config_entries.ConfigSubentry]:
    """Return the entry's satellite sub-entries."""
    return [s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_SATELLITE]


async def add(
    hass: HomeAssistant, entry: MockConfigEntry, host: str, port: int
) -> dict[str, object]:
    """Run the satellite sub-entry flow with ``host``/``port``; return the result."""
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_SATELLITE), context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_HOST: host, CONF_PORT: port}
    )
    await hass.async_block_till_done()
    return dict(result)


def found(port: int | None, name: str = "kitchen") -> ZeroconfServiceInfo:
    """Return what zeroconf says about a Wyoming service on 127.0.0.1."""
    return ZeroconfServiceInfo(
        ip_address=ip_address("127.0.0.1"),
        ip_addresses=[ip_address("127.0.0.1")],
        port=port,
        hostname=f"{name}.local.",
        type=SERVICE,
        name=f"{name}.{SERVICE}",
        properties={},
    )


async def discover(hass: HomeAssistant, info: ZeroconfServiceInfo) -> dict[str, object]:
    """Start the config flow zeroconf starts; return its first result."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_ZEROCONF}, data=info
    )
    return dict(result)


async def test_a_satellite_that_answers_is_added_and_connected(
    hass: HomeAssistant, setup_entry: MockConfigEntry, scripted_satellite: ScriptedSatellite
) -> None:
    """Host and port, checked live: the sub-entry has its name and area; the entity connects."""
    result = await add(hass, setup_entry, scripted_satellite.host, scripted_satellite.port)

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Scripted satellite"
    assert result["data"] == {
        CONF_HOST: scripted_satellite.host,
        CONF_PORT: scripted_satellite.port,
        CONF_AREA: "Hall",
    }
    await scripted_satellite.wait_connected()
    assert hass.states.async_entity_ids("assist_satellite") == [
        "assist_satellite.scripted_satellite"
    ]
    assert await hass.config_entries.async_unload(setup_entry.entry_id)


async def test_what_is_no_satellite_is_refused(
    hass: HomeAssistant, setup_entry: MockConfigEntry, scripted_asr: ScriptedAsrServer
) -> None:
    """A closed port cannot be reached; a speech-to-text server is no satellite."""
    result = await add(hass, setup_entry, "127.0.0.1", closed_port())
    assert result["errors"] == {"base": "cannot_connect"}
    result = await add(hass, setup_entry, scripted_asr.host, scripted_asr.port)
    assert result["errors"] == {"base": "not_satellite"}
    assert satellites(setup_entry) == []


async def test_a_satellite_is_added_once_and_moved_by_reconfigure(
    hass: HomeAssistant, setup_companion: SetupCompanion, scripted_satellite: ScriptedSatellite
) -> None:
    """The same host and port again is refused; reconfigure checks the new place live."""
    entry = await setup_companion(persona(), satellite("127.0.0.1", closed_port(), "Old"))
    (old,) = satellites(entry)
    result = await add(hass, entry, "127.0.0.1", old.data[CONF_PORT])
    assert result == result | {"type": FlowResultType.ABORT, "reason": "already_configured"}

    flow = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_SATELLITE),
        context={"source": config_entries.SOURCE_RECONFIGURE, "subentry_id": old.subentry_id},
    )
    schema = flow["data_schema"]
    assert schema is not None
    suggested = {
        str(key): key.description.get("suggested_value") for key in schema.schema if key.description
    }
    assert suggested == {CONF_HOST: "127.0.0.1", CONF_PORT: old.data[CONF_PORT]}
    flow = await hass.config_entries.subentries.async_configure(
        flow["flow_id"], {CONF_HOST: "127.0.0.1", CONF_PORT: closed_port()}
    )
    assert flow["errors"] == {"base": "cannot_connect"}  # checked, not just stored
    flow = await hass.config_entries.subentries.async_configure(
        flow["flow_id"], {CONF_HOST: scripted_satellite.host, CONF_PORT: scripted_satellite.port}
    )
    await hass.async_block_till_done()
    assert flow["reason"] == "reconfigure_successful"
    assert entry.subentries[old.subentry_id].data[CONF_PORT] == scripted_satellite.port
    await scripted_satellite.wait_connected()
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_zeroconf_offers_a_found_satellite_to_the_companion(
    hass: HomeAssistant, setup_entry: MockConfigEntry, scripted_satellite: ScriptedSatellite
) -> None:
    """Found on the network: confirmed, it becomes a satellite of the companion's entry."""
    result = await discover(hass, found(scripted_satellite.port))
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "zeroconf_confirm"
    assert result["description_placeholders"] == {"name": "Scripted satellite"}

    result = dict(await hass.config_entries.flow.async_configure(str(result["flow_id"]), {}))
    await hass.async_block_till_done()

    assert result["reason"] == "satellite_added"
    (added,) = satellites(setup_entry)
    assert added.title == "Scripted satellite"
    assert added.data[CONF_ZEROCONF_NAME] == "kitchen"
    await scripted_satellite.wait_connected()
    again = await discover(hass, found(scripted_satellite.port))
    assert again["reason"] == "satellite_configured"
    assert await hass.config_entries.async_unload(setup_entry.entry_id)


async def test_zeroconf_moves_a_known_satellite_to_its_new_address(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    """The satellite came back on another port: the sub-entry follows it; nothing is offered."""
    known = satellite("127.0.0.1", closed_port())
    known["data"] = {**known["data"], CONF_ZEROCONF_NAME: "kitchen"}
    entry = await setup_companion(persona(), known)
    moved = closed_port()
    result = await discover(hass, found(moved))
    await hass.async_block_till_done()
    assert result["reason"] == "satellite_configured"
    (updated,) = satellites(entry)
    assert updated.data[CONF_PORT] == moved


async def test_zeroconf_leaves_alone_what_it_cannot_add(
    hass: HomeAssistant, setup_entry: MockConfigEntry, scripted_asr: ScriptedAsrServer
) -> None:
    """No port, another Wyoming server, nothing answering: no offer."""
    assert (await discover(hass, found(None)))["reason"] == "no_port"
    assert (await discover(hass, found(scripted_asr.port)))["reason"] == "not_satellite"
    assert (await discover(hass, found(closed_port())))["reason"] == "cannot_connect"
    assert satellites(setup_entry) == []


async def test_zeroconf_needs_a_companion_and_asks_which_when_there_are_two(
    hass: HomeAssistant, setup_companion: SetupCompanion, scripted_satellite: ScriptedSatellite
) -> None:
    """With no entry there is nothing to add it to; with two, the person picks one."""
    assert (await discover(hass, found(scripted_satellite.port)))["reason"] == "no_companion_entry"
    first = await setup_companion(persona())
    second = await setup_companion(persona("Other"))
    result = await discover(hass, found(scripted_satellite.port))
    assert result["step_id"] == "zeroconf_confirm"
    result = dict(
        await hass.config_entries.flow.async_configure(
            str(result["flow_id"]), {"entry": second.entry_id}
        )
    )
    await hass.async_block_till_done()
    assert result["reason"] == "satellite_added"
    assert (len(satellites(first)), len(satellites(second))) == (0, 1)
    await scripted_satellite.wait_connected()
    assert await hass.config_entries.async_unload(second.entry_id)
