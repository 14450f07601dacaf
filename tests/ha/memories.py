"""Memory through a real HA for tests: people, an entry's memory, the integration's services."""

from __future__ import annotations

from typing import cast

from homeassistant.core import HomeAssistant
from homeassistant.util.json import JsonObjectType
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN
from custom_components.companion_agent.engine.memory.companion import CompanionMemory

type Row = dict[str, str | None]


async def add_person(hass: HomeAssistant, name: str) -> tuple[str, str]:
    """Create an HA user and a person entity for it; return (user id, person entity id)."""
    user = await hass.auth.async_create_user(name)
    slug = name.lower()
    hass.states.async_set(f"person.{slug}", "home", {"user_id": user.id, "friendly_name": name})
    return user.id, f"person.{slug}"


def memory_of(entry: MockConfigEntry) -> CompanionMemory:
    """Return the entry's memory (it must be on)."""
    memory = cast(CompanionMemory | None, entry.runtime_data.engine.memory)
    assert memory is not None
    return memory


async def settled(entry: MockConfigEntry) -> None:
    """Wait until the entry's memory wrote everything it queued."""
    assert await memory_of(entry).wait_idle(5)


async def call(
    hass: HomeAssistant, service: str, data: dict[str, object], *, response: bool = True
) -> JsonObjectType:
    """Call one of the integration's services and return its response."""
    result = await hass.services.async_call(
        DOMAIN, service, data, blocking=True, return_response=response
    )
    return dict(result or {})


def rows(response: JsonObjectType, key: str = "memories") -> list[Row]:
    """Return the memory records a service answered."""
    return cast(list[Row], response[key])


def row(response: JsonObjectType, key: str) -> Row:
    """Return the one memory record a service answered under ``key``."""
    return cast(Row, response[key])
