"""``companion_agent/subscribe``: one WebSocket subscription that feeds a companion card.

Request: ``{"type": "companion_agent/subscribe", "entity_id": "conversation.<persona>"}``.
The result comes first (an error ``not_found`` for anything but a loaded persona), then a
``snapshot`` event, then the persona's events as they happen (``events.py``), each only if
the signed-in user may see it (``hub.visible``), and ``memories`` again whenever the
household's conclusions may have changed (by hand, or at the end of a turn).

**The snapshot**, what a card is sent first: the persona's face vocabulary, its state, held
actions, memories. Everything is read for one viewer (``hub.visible`` decides the held
actions) and bounded. The memories are the persona's current *household* conclusions
only, as on its to-do list: a person's own never reach a dashboard, which others may be
looking at.
"""

from __future__ import annotations

import base64
import time
from typing import Any, cast

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
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import STATE_UNAVAILABLE, STATE_UNKNOWN, Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.dispatcher import async_dispatcher_connect

from ..compat import async_get_entity
from ..const import DOMAIN, LOGGER, signal_memory_changed
from ..engine.json_types import JSONObject, JSONValue
from ..engine.memory import HOUSEHOLD, MemoryScope
from ..runtime import Speaker
from .events import CardEvent, ConfirmationChanged, TurnEnded, clip
from .hub import CardSubscription, Viewer, visible
from .voice_enrolment import async_register_voice_commands

COMMAND = f"{DOMAIN}/subscribe"


@callback
def async_register_websocket(hass: HomeAssistant) -> None:
    """Offer the card's subscription, and its voice enrolment, on HA's WebSocket API."""
    async_register_command(hass, websocket_subscribe)
    async_register_voice_commands(hass)


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


# The snapshot: what a card is sent first.
MAX_MEMORIES = 50


@callback
def async_find_persona(hass: HomeAssistant, entity_id: str) -> Speaker | None:
    """Return the loaded persona behind a conversation entity of ours, or None."""
    registered = er.async_get(hass).async_get(entity_id)
    if (
        registered is None
        or registered.platform != DOMAIN
        or registered.domain != Platform.CONVERSATION
        or registered.config_subentry_id is None
    ):
        return None
    entity = async_get_entity(hass, entity_id)
    entry = getattr(entity, "entry", None)
    if entity is None or getattr(entry, "state", None) is not ConfigEntryState.LOADED:
        return None
    return cast(Speaker, entity)


def persona_face(speaker: Speaker) -> JSONObject:
    """Return the persona's name, language and face: its emotions, gestures and images."""
    profile = speaker.persona.profile
    tags = profile.output.actions
    faces: JSONObject = {
        emotion: f"data:{image.media_type};base64,{base64.b64encode(image.data).decode()}"
        for emotion, image in profile.faces.items()
    }
    return {
        "entity_id": speaker.entity_id,
        "name": speaker.subentry.title,
        "profile": profile.id,
        "language": profile.language,
        "emotions": [t.lower() for t in tags if profile.output.is_emotion(t)],
        "gestures": [t for t in tags if not profile.output.is_emotion(t)],
        "faces": faces,
    }


def current_emotion(hass: HomeAssistant, persona_id: str) -> str:
    """Return the emotion the persona's sensor shows, or ``neutral``."""
    entity_id = er.async_get(hass).async_get_entity_id(
        Platform.SENSOR, DOMAIN, f"{persona_id}_emotion"
    )
    state = hass.states.get(entity_id) if entity_id else None
    shown = state is not None and state.state not in (STATE_UNKNOWN, STATE_UNAVAILABLE, "")
    return state.state if state is not None and shown else "neutral"


def held_actions(speaker: Speaker, viewer: Viewer) -> list[JSONValue]:
    """Return the persona's held actions this viewer may see and answer."""
    persona_id = speaker.subentry.subentry_id
    engine = speaker.entry.runtime_data.engine
    now, clock = time.time(), time.monotonic()
    held: list[JSONValue] = []
    for token in engine.pending_confirmations():
        event = ConfirmationChanged(
            persona_id=token.ctx.agent_id,
            user_id=token.user_id,
            status="requested",
            token=token,
            expires_at=now + token.expires_at - clock,
        )
        if token.ctx.agent_id == persona_id and visible(event, viewer):
            held.append(event.payload())
    return held


async def household_memories(speaker: Speaker) -> JSONObject:
    """Return the persona's current household conclusions (``available`` False: memory off)."""
    memory = speaker.entry.runtime_data.engine.memory
    if memory is None:
        return {"kind": "memories", "available": False, "items": []}
    scope = MemoryScope(
        agent_id=speaker.subentry.subentry_id,
        owner=HOUSEHOLD,
        environment=memory.settings.environment,
    )
    try:
        records = await memory.conclusions(scope)
    except Exception as err:  # a store that does not answer: the card keeps its list
        LOGGER.debug("Card memories not read: %s", err)
        return {"kind": "memories", "available": False, "items": []}
    items: list[JSONValue] = [
        {"id": r.id, "topic": clip(r.topic or "", 80), "text": clip(r.text, 300)}
        for r in records[:MAX_MEMORIES]
    ]
    return {"kind": "memories", "available": True, "items": items}
