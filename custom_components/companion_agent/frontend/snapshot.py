"""What a card is sent first: the persona's face vocabulary, its state, held actions, memories.

Everything is read for one viewer (``hub.visible`` decides the held actions) and bounded.
The memories are the persona's current *household* conclusions only, as on its to-do list:
a person's own never reach a dashboard, which others may be looking at.
"""

from __future__ import annotations

import base64
import time
from typing import cast

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import STATE_UNAVAILABLE, STATE_UNKNOWN, Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er

from ..compat import async_get_entity
from ..const import DOMAIN, LOGGER
from ..engine.json_types import JSONObject, JSONValue
from ..engine.memory import HOUSEHOLD, MemoryScope
from ..runtime import Speaker
from .events import ConfirmationChanged, clip
from .hub import Viewer, visible

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
