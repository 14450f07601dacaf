"""Turns through HA's conversation API, as the Assist pipeline runs them, and their answers."""

from __future__ import annotations

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant


async def ask(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    conversation_id: str | None = None,
    *,
    user_id: str | None = None,
    language: str = "en",
) -> conversation.ConversationResult:
    """Run one turn as ``user_id`` (None: a satellite with nobody signed in)."""
    return await conversation.async_converse(
        hass, text, conversation_id, Context(user_id=user_id), language=language, agent_id=agent_id
    )


def speech(result: conversation.ConversationResult) -> str:
    """Return what the answer says."""
    return str(result.response.speech["plain"]["speech"])
