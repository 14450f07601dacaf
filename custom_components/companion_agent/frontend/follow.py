"""Which turns the companion's cards follow: a person's, and one the home began.

Each is followed by a ``TurnTimeline`` (``frontend/timeline``) for the persona's cards, with
the voice that speaks it (when it is ours, its sentences go out as they are heard) and the
satellite that plays it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from homeassistant.components.conversation import ConversationInput
from homeassistant.core import HomeAssistant, callback, split_entity_id
from homeassistant.helpers import entity_registry as er

from ..const import DOMAIN
from ..engine.events import OutputItem
from ..engine.turn.handle import Turn
from .timeline import TurnAudience, TurnTimeline


@callback
def async_follow_turn(
    hass: HomeAssistant,
    persona_id: str,
    user_input: ConversationInput,
    turn: Turn,
    *,
    voice: str | None,
    emotions: frozenset[str],
) -> AsyncIterator[OutputItem]:
    """Return the turn's items, followed for the persona's cards on their way.

    ``voice``: our TTS entity the turn's pipeline speaks with (``tts.async_pipeline_voice``).
    """
    audience = TurnAudience(
        persona_id=persona_id,
        user_id=user_input.context.user_id,
        emotions=emotions,
        voice=voice,
        satellite=user_input.satellite_id,
    )
    return TurnTimeline(hass, audience, turn).items(turn.items())


@callback
def async_follow_proactive(
    hass: HomeAssistant,
    persona_id: str,
    turn: Turn,
    tts_engine: str,
    target: str,
    *,
    emotions: frozenset[str],
) -> AsyncIterator[OutputItem]:
    """Return a turn the home began (no person: everyone's), followed for the cards.

    ``tts_engine`` speaks it (heard when it is one of our voices); ``target`` plays it.
    """
    registered = er.async_get(hass).async_get(tts_engine)
    ours = registered is not None and registered.platform == DOMAIN
    audience = TurnAudience(
        persona_id=persona_id,
        user_id=None,
        emotions=emotions,
        voice=tts_engine if ours else None,
        satellite=target if split_entity_id(target)[0] == "assist_satellite" else None,
    )
    return TurnTimeline(hass, audience, turn).items(turn.items())
