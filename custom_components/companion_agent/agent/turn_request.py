"""The one turn request, however a turn starts: the person's words, ``start_chat``, a trigger.

The conversation entity, ``companion_agent.start_chat`` and the trigger plugins' speech all
build their ``TurnRequest`` here: a fresh trace id, the persona's id as the agent, the
spoken lines in the turn's language, and whatever of the house the turn may use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from homeassistant.components.conversation import ChatLog
from homeassistant.core import HomeAssistant, callback
from homeassistant.util.ulid import ulid_now

from ..const import HOST_PROMPT
from ..engine.engine import ModelCall
from ..engine.plugins import Hook
from ..engine.tools.contract import ToolContext
from ..engine.turn.request import Initiator, Persona, TurnRequest
from .cameras import HassCameras
from .ha_tools import HassTurnTools
from .spoken import async_spoken_lines


async def async_turn_request(
    hass: HomeAssistant,
    persona: Persona,
    persona_id: str,
    text: str,
    *,
    conversation_id: str,
    language: str,
    user_id: str | None = None,
    device_id: str | None = None,
    satellite_id: str | None = None,
    instructions: str = HOST_PROMPT,
    house: HassTurnTools | None = None,
    hooks: Sequence[Hook] = (),
    initiator: Initiator = "person",
    chat_log: ChatLog | None = None,
) -> TurnRequest:
    """Return the request for one turn of ``persona`` (the subentry ``persona_id``).

    ``house`` gives the turn HA's tools and the guard its targets and states, and the
    cameras exposed to Assist; without it the turn acts on and sees nothing in the house.
    ``chat_log``'s trace gets each model call's tokens and timings.
    """
    return TurnRequest(
        persona=persona,
        text=text,
        context=ToolContext(
            conversation_id=conversation_id,
            user_id=user_id,
            trace_id=ulid_now(),
            language=language,
            agent_id=persona_id,
        ),
        lines=await async_spoken_lines(hass, language),
        device_id=device_id,
        satellite_id=satellite_id,
        host_instructions=instructions,
        host_tools=house.tools(persona.applied_rules.marks) if house is not None else (),
        host_targets=house,
        host_state=house,
        host_hooks=hooks,
        initiator=initiator,
        host_cameras=HassCameras(hass) if house is not None and house.api is not None else None,
        on_model_call=None if chat_log is None else trace_to(chat_log),
    )


def trace_to(chat_log: ChatLog) -> Callable[[ModelCall], None]:
    """Return a listener that adds each model call's usage and timings to the trace."""

    @callback
    def _trace(call: ModelCall) -> None:
        """Add one call to the conversation's trace, as HA's own LLM integrations do."""
        chat_log.async_trace({"stats": call.as_trace()})

    return _trace
