"""Confirmations outside the conversation: HA events out, the confirm_action service in."""

from __future__ import annotations

import time

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant, ServiceCall, callback
from homeassistant.exceptions import ServiceValidationError

from ..const import DOMAIN, EVENT_CONFIRMATION
from ..engine.engine import (
    UNRUN_REASONS,
    ConfirmationResult,
    ConfirmationStatus,
    ConfirmationToken,
)
from ..engine.errors import ConfirmationRefusedError
from ..engine.json_types import JSONObject
from ..frontend.events import ConfirmationChanged
from ..frontend.hub import async_publish
from ..runtime import loaded, loaded_entries


@callback
def async_fire_confirmation(
    hass: HomeAssistant, entry: ConfigEntry, token: ConfirmationToken, status: ConfirmationStatus
) -> None:
    """Tell automations and dashboards about a held call; only a request carries the token.

    A request also says whether only an adult may approve it (``needs_adult``: an enrolled
    adult's voice, or a signed-in person not enrolled as a child), so an automation can ask
    only the adults.

    An end that ran nothing (declined, expired, interrupted by a reload, a restart or a
    shutdown) says why, in the words the model hears.
    """
    data: JSONObject = {
        "config_entry_id": entry.entry_id,
        "status": status,
        "conversation_id": token.conversation_id,
        "trace_id": token.ctx.trace_id,
        "action": token.action,
    }
    if status == "requested":
        data["token"] = token.token_id
        data["expires_in"] = round(token.expires_at - token.created_at)
        data["needs_adult"] = token.needs_voice
    elif status in UNRUN_REASONS:
        data["reason"] = UNRUN_REASONS[status]
    hass.bus.async_fire(EVENT_CONFIRMATION, data)
    expires_at = time.time() + token.expires_at - time.monotonic()
    async_publish(
        hass,
        ConfirmationChanged(
            persona_id=token.ctx.agent_id,
            user_id=token.user_id,
            status=status,
            token=token,
            expires_at=expires_at,
        ),
    )


async def async_confirm_action(hass: HomeAssistant, call: ServiceCall) -> JSONObject:
    """Approve or deny a held call by its token, from a dashboard or a notification."""
    token_id: str = call.data["token"]
    approve: bool = call.data["approve"]
    entries = loaded_entries(hass)
    owner = next(
        (e for e in entries if e.runtime_data.engine.pending_confirmation(token_id)),
        entries[0],
    )
    engine = owner.runtime_data.engine
    token = engine.pending_confirmation(token_id)
    user_id = await _acting_user(hass, call, token)
    adult = await _async_adult(hass, user_id)
    try:
        result = await engine.confirm(token_id, approve=approve, user_id=user_id, adult=adult)
    except ConfirmationRefusedError as err:
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key=f"confirmation_{err.reason}"
        ) from err
    return _response(result)


async def _acting_user(
    hass: HomeAssistant, call: ServiceCall, token: ConfirmationToken | None
) -> str | None:
    """Act as the token's owner for automations and admins; anyone else acts as themself."""
    caller = call.context.user_id
    if caller is None or token is None:
        return token.user_id if token is not None else caller
    user = await hass.auth.async_get_user(caller)
    if user is not None and user.is_admin:
        return token.user_id
    return caller


async def _async_adult(hass: HomeAssistant, user_id: str | None) -> bool:
    """Say whether ``user_id`` may approve a call that waits for an adult's voice.

    Only a person whose voice is enrolled as a child's (in any loaded entry) may not.
    """
    return not any(entry.runtime_data.voices.role_of(user_id) == "child" for entry in loaded(hass))


def _response(result: ConfirmationResult) -> JSONObject:
    """Return what the service answers: whether it ran, and how it ended."""
    return {
        "status": result.status,
        "outcome": result.outcome.kind,
        "result": result.outcome.content,
        "action": result.token.action,
    }
