"""Helpers for memory tests through a real HA: people, turns as them, memory calls."""

from __future__ import annotations

from typing import cast

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.util.json import JsonObjectType
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN
from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from tests.support.llm_server import LLMServer


async def add_person(hass: HomeAssistant, name: str) -> tuple[str, str]:
    """Create an HA user and a person entity for it; return (user id, person entity id)."""
    user = await hass.auth.async_create_user(name)
    slug = name.lower()
    hass.states.async_set(f"person.{slug}", "home", {"user_id": user.id, "friendly_name": name})
    return user.id, f"person.{slug}"


async def talk(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    *,
    user_id: str | None = None,
    conversation_id: str | None = None,
) -> conversation.ConversationResult:
    """Run one turn as ``user_id`` (None: a satellite with nobody signed in)."""
    return await conversation.async_converse(
        hass,
        text,
        conversation_id,
        Context(user_id=user_id),
        language="en",
        agent_id=agent_id,
    )


type Row = dict[str, str | None]


def memory_of(entry: MockConfigEntry) -> CompanionMemory:
    """Return the entry's memory (it must be on)."""
    memory = cast(CompanionMemory | None, entry.runtime_data.engine.memory)
    assert memory is not None
    return memory


def rows(response: JsonObjectType, key: str = "memories") -> list[Row]:
    """Return the memory records a service answered."""
    return cast(list[Row], response[key])


def row(response: JsonObjectType, key: str) -> Row:
    """Return the one memory record a service answered under ``key``."""
    return cast(Row, response[key])


async def settled(entry: MockConfigEntry) -> None:
    """Wait until the entry's memory wrote everything it queued."""
    assert await memory_of(entry).settle(5)


def last_user_message(server: LLMServer) -> str:
    """Return the user message of the last chat request."""
    messages = server.requests[-1]["messages"]
    assert isinstance(messages, list)
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


def all_messages(server: LLMServer) -> str:
    """Return every message of the last chat request as one string."""
    return str(server.requests[-1]["messages"])


async def call(
    hass: HomeAssistant, service: str, data: dict[str, object], *, response: bool = True
) -> JsonObjectType:
    """Call one of the integration's services and return its response."""
    result = await hass.services.async_call(
        DOMAIN, service, data, blocking=True, return_response=response
    )
    return dict(result or {})
