"""The ``companion_agent.start_chat`` action: find the persona, check the call, speak first."""

from __future__ import annotations

from typing import cast

from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, callback
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import entity_registry as er

from ..compat import async_get_entity
from ..const import DOMAIN, SUBENTRY_CONVERSATION
from ..runtime import Speaker, loaded_entries
from .request import ChatRequest, instruction_text
from .speak import async_start_chat


async def async_handle_start_chat(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Run the ``start_chat`` service: speak as the persona on every target."""
    speaker = async_find_speaker(hass, call.data.get("persona") or None)
    request = ChatRequest(
        targets=tuple(call.data["targets"]),
        instruction=instruction_text(call.data.get("instruction"), call.data.get("topic")),
        source="service",
        preannounce=call.data["preannounce"],
    )
    chats = await async_start_chat(hass, speaker, request)
    return {
        "chats": [
            {"target": c.target, "trace_id": c.trace_id, "text": c.text, "outcome": c.outcome}
            for c in chats
        ]
    }


@callback
def async_find_speaker(hass: HomeAssistant, persona: str | None) -> Speaker:
    """Return the persona by conversation entity or subentry id; None picks the first one."""
    registry = er.async_get(hass)
    for entry in loaded_entries(hass):
        agents = {
            e.config_subentry_id: e.entity_id
            for e in er.async_entries_for_config_entry(registry, entry.entry_id)
            if e.domain == "conversation"
        }
        for subentry in entry.subentries.values():
            entity_id = agents.get(subentry.subentry_id)
            if subentry.subentry_type != SUBENTRY_CONVERSATION or entity_id is None:
                continue
            if persona not in (None, entity_id, subentry.subentry_id):
                continue
            if (entity := async_get_entity(hass, entity_id)) is not None:
                return cast(Speaker, entity)
    raise ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key="unknown_persona",
        translation_placeholders={"persona": persona or ""},
    )
