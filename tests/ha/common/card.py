"""The companion card through a real HA, for tests: its house, its users and its WebSocket client.

The card's house is HA's demo lock (the ``demo_lock`` fixture loads only it) and one persona
with the card profile; ``Card`` reads one subscription over HA's real WebSocket API.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from tests.ha.common import SetupCompanion, agents_by_title, persona, write_profile

CARD_PROFILE = """
    name = "Card"
    language = "en"
    persona = "SECRET-PERSONA-PROMPT: you are the card test persona."
    [output]
    instructions = "SECRET-OUTPUT-RULES: tag emotions."
    actions = ["joy", "surprise", "think", "wave"]
    [policy]
    "lock" = "confirm"
"""
PROMPT_MARKERS = ("SECRET-PERSONA-PROMPT", "SECRET-OUTPUT-RULES", "Stay in the persona")
CLIENT_ID = "https://card.test/"
WAIT = 5.0


async def card_house(
    hass: HomeAssistant, setup_companion: SetupCompanion, profile: str = CARD_PROFILE
) -> tuple[MockConfigEntry, str]:
    """Set up the demo lock (exposed) and one persona with the card profile and Assist."""
    assert await async_setup_component(hass, "conversation", {})
    demo = MockConfigEntry(domain="demo")
    demo.add_to_hass(hass)
    assert await hass.config_entries.async_setup(demo.entry_id)
    await hass.async_block_till_done()
    async_expose_entity(hass, conversation.DOMAIN, "lock.front_door", True)
    write_profile(hass, "card", profile)
    entry = await setup_companion(persona(profile="card", llm_apis=[llm.LLM_API_ASSIST]))
    return entry, agents_by_title(hass, entry)["Companion"]


def write_face(hass: HomeAssistant, name: str, data: bytes) -> None:
    """Write an image into ``<config>/companion_agent/profiles/faces/``."""
    folder = Path(hass.config.path("companion_agent", "profiles", "faces"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


async def user_token(hass: HomeAssistant, name: str, *, admin: bool = False) -> tuple[str, str]:
    """Create an HA user; return its id and an access token for the WebSocket."""
    user = await hass.auth.async_create_user(
        name, group_ids=["system-admin" if admin else "system-users"]
    )
    refresh = await hass.auth.async_create_refresh_token(user, CLIENT_ID)
    return user.id, hass.auth.async_create_access_token(refresh)


class Card:
    """One card's subscription over HA's real WebSocket API: every message it was sent."""

    def __init__(self, client: MockHAClientWebSocket) -> None:
        """Read the subscription of ``client``."""
        self.client = client
        self.messages: list[dict[str, Any]] = []

    @classmethod
    async def open(
        cls, hass: HomeAssistant, ws: WebSocketGenerator, entity_id: str, token: str | None = None
    ) -> Card:
        """Connect as the token's user, subscribe to ``entity_id``, read the snapshot."""
        client = await ws(hass, token) if token else await ws(hass)
        card = cls(client)
        await client.send_json_auto_id(
            {"type": "companion_agent/subscribe", "entity_id": entity_id}
        )
        result = await client.receive_json()
        assert result["success"], result
        await card.until("memories")
        return card

    async def until(self, kind: str, **fields: object) -> dict[str, Any]:
        """Read messages until one of ``kind`` (with ``fields``) arrives; return it."""
        async with asyncio.timeout(WAIT):
            while True:
                message = await self.client.receive_json()
                assert message["type"] == "event", message
                event = cast(dict[str, Any], message["event"])
                self.messages.append(event)
                if event["kind"] == kind and all(event.get(k) == v for k, v in fields.items()):
                    return event

    async def drain(self, quiet: float = 0.2) -> None:
        """Read whatever arrives until ``quiet`` seconds pass without a message."""
        while True:
            try:
                async with asyncio.timeout(quiet):
                    message = await self.client.receive_json()
            except TimeoutError:
                return
            self.messages.append(cast(dict[str, Any], message["event"]))

    def kinds(self) -> list[str]:
        """Return the kinds of every event so far, in order."""
        return [m["kind"] for m in self.messages]

    def of(self, kind: str) -> list[dict[str, Any]]:
        """Return every event of ``kind`` so far."""
        return [m for m in self.messages if m["kind"] == kind]
