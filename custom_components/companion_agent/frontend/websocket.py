"""``companion_agent/subscribe``: one WebSocket subscription that feeds a companion card.

Request: ``{"type": "companion_agent/subscribe", "entity_id": "conversation.<persona>"}``.
The result comes first (an error ``not_found`` for anything but a loaded persona), then a
``snapshot`` event, then the persona's events as they happen (``events.py``), each only if
the signed-in user may see it (``hub.visible``), and ``memories`` again whenever the
household's conclusions may have changed (by hand, or at the end of a turn).
"""

from __future__ import annotations

from typing import Any

import voluptuous as vol
from homeassistant.components.websocket_api import async_register_command
from homeassistant.components.websocket_api.connection import ActiveConnection
from homeassistant.components.websocket_api.const import ERR_NOT_FOUND
from homeassistant.components.websocket_api.decorators import (
    async_response,
    websocket_command,
    ws_require_user,
)
from homeassistant.components.websocket_api.messages import event_message
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.dispatcher import async_dispatcher_connect

from ..const import DOMAIN, signal_memory_changed
from ..engine.json_types import JSONObject
from ..runtime import Speaker
from .events import CardEvent, TurnEnded
from .hub import CardSubscription, Viewer
from .snapshot import (
    async_find_persona,
    current_emotion,
    held_actions,
    household_memories,
    persona_face,
)

COMMAND = f"{DOMAIN}/subscribe"


@callback
def async_register_websocket(hass: HomeAssistant) -> None:
    """Offer the card's subscription on HA's WebSocket API."""
    async_register_command(hass, websocket_subscribe)


@websocket_command({vol.Required("type"): COMMAND, vol.Required("entity_id"): cv.entity_id})
@ws_require_user(allow_system_user=False)
@async_response
async def websocket_subscribe(
    hass: HomeAssistant, connection: ActiveConnection, msg: dict[str, Any]
) -> None:
    """Subscribe a card to one persona: a snapshot, then its events, for this user only."""
    speaker = async_find_persona(hass, msg["entity_id"])
    if speaker is None:
        connection.send_error(msg["id"], ERR_NOT_FOUND, "not a companion persona")
        return
    user = connection.user
    viewer = Viewer(user_id=user.id, is_admin=user.is_admin)
    iden = msg["id"]

    @callback
    def send(message: JSONObject) -> None:
        """Deliver one message to the card."""
        connection.send_message(event_message(iden, message))

    subscription = CardSubscription(hass, speaker.subentry.subentry_id, viewer, send)
    subscription.async_start()
    connection.subscriptions[iden] = subscription.async_stop
    connection.send_result(iden)
    memories = _MemoryRefresh(hass, speaker, subscription)
    subscription.add_stop(
        async_dispatcher_connect(
            hass, signal_memory_changed(speaker.entry.entry_id), memories.async_refresh
        )
    )
    subscription.listeners.append(memories.after_turn)
    send(
        {
            "kind": "snapshot",
            "persona": persona_face(speaker),
            "emotion": current_emotion(hass, speaker.subentry.subentry_id),
            "confirmations": held_actions(speaker, viewer),
            "user": {"id": user.id, "name": user.name, "is_admin": user.is_admin},
        }
    )
    send(await household_memories(speaker))
    subscription.async_release()


class _MemoryRefresh:
    """Send a card the household memories again when they may have changed: one read at a time."""

    def __init__(
        self, hass: HomeAssistant, speaker: Speaker, subscription: CardSubscription
    ) -> None:
        """Refresh for ``subscription``."""
        self._hass = hass
        self._speaker = speaker
        self._subscription = subscription
        self._reading = False
        self._again = False

    @callback
    def after_turn(self, event: CardEvent) -> None:
        """Refresh once a turn has ended (it may have remembered something)."""
        if isinstance(event, TurnEnded):
            self.async_refresh()

    @callback
    def async_refresh(self) -> None:
        """Read the memories again (once more after the read under way, if one is)."""
        if self._reading:
            self._again = True
            return
        self._reading = True
        self._speaker.entry.async_create_background_task(
            self._hass, self._read(), f"{DOMAIN} card memories"
        )

    async def _read(self) -> None:
        """Read and queue the memories until no refresh is wanted."""
        try:
            while True:
                self._again = False
                self._subscription.async_send(await household_memories(self._speaker))
                if not self._again:
                    return
        finally:
            self._reading = False
