"""HA's demo lock, light and cover as the house the companion acts on, for tests.

``build_house`` sets up the demo devices (the ``demo_devices`` fixture loads only these
three platforms, the lock unlocking at once), exposes a few to Assist and the companion with
Assist's tools; ``say`` runs a turn and returns its ChatLog; ``tool_results``, ``state`` and
``audit`` read what the turn did.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import Platform
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session, llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN
from custom_components.companion_agent.engine.audit import read_audit
from custom_components.companion_agent.engine.engine import AUDIT_FILE
from tests.ha.common import SetupCompanion, async_load, entity_id, persona

DEMO_PLATFORMS = [Platform.LOCK, Platform.LIGHT, Platform.COVER]
EXPOSED = ("lock.front_door", "light.bed_light", "cover.garage_door", "cover.kitchen_window")
UNLOCK = '{"name": "Front Door", "domain": ["lock"]}'


async def build_house(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    options: dict[str, object] | None = None,
) -> MockConfigEntry:
    """Set up HA's demo lock, light and cover, expose a few, and the companion with Assist."""
    assert await async_setup_component(hass, "conversation", {})
    await async_load(hass, MockConfigEntry(domain="demo"))
    for exposed in EXPOSED:
        async_expose_entity(hass, conversation.DOMAIN, exposed, True)
    return await setup_companion(persona(llm_apis=[llm.LLM_API_ASSIST]), options=options)


async def say(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    text: str,
    conversation_id: str | None = None,
    context: Context | None = None,
) -> tuple[conversation.ConversationResult, list[conversation.Content]]:
    """Send one utterance in a conversation; return the result and the whole ChatLog."""
    with chat_session.async_get_chat_session(hass, conversation_id) as session:
        result = await conversation.async_converse(
            hass,
            text,
            session.conversation_id,
            context or Context(),
            language="en",
            agent_id=entity_id(hass, entry, "conversation"),
        )
        with conversation.async_get_chat_log(hass, session) as chat_log:
            return result, list(chat_log.content)


def tool_results(content: list[conversation.Content]) -> list[tuple[str, object]]:
    """Return (tool name, status) of each tool result in the ChatLog."""
    return [
        (c.tool_name, c.tool_result.get("status"))
        for c in content
        if isinstance(c, conversation.ToolResultContent)
    ]


def state(hass: HomeAssistant, entity_id: str) -> str:
    """Return an entity's state."""
    current = hass.states.get(entity_id)
    assert current is not None
    return current.state


def audit(hass: HomeAssistant) -> list[Mapping[str, object]]:
    """Return the audit log's records."""
    return list(read_audit(Path(hass.config.path(DOMAIN, AUDIT_FILE))))


async def flush_audit(entry: MockConfigEntry) -> None:
    """Wait for the audit writer."""
    await entry.runtime_data.engine.flush()
