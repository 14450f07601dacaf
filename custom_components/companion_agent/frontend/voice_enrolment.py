"""``companion_agent/voice/enrol`` and ``/voice/forget``: the signed-in user's voice, from the card.

The card records a few short phrases in the browser and sends them as base64 of 16 kHz,
16-bit mono little-endian PCM: ``{"type": "companion_agent/voice/enrol", "clips": [...]}``,
at most ``MAX_CLIPS`` clips of at most ``MAX_CLIP_SECONDS`` each (six of fifteen seconds
stay under the 4 MiB a WebSocket message may hold). The voice is the connection's user's
only, enrolled under their ``person`` (error ``person_without_user`` when none is linked to
them) into every loaded entry, with the role ``enrolment_role`` gives: an administrator's
own is an adult's, anyone else keeps the role given them or is a child. The answer is
``{"samples": n, "skipped": [...]}`` (the clips learned from this time, and the names of
those with too little speech); errors carry a code (``invalid_format``,
``no_speech``, ``voice_model_unavailable``, ``voiceprint_file``). ``companion_agent/voice/forget``
removes the user's own voiceprint and answers ``{"removed": bool}``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator
from typing import Any

import voluptuous as vol
from homeassistant.components.websocket_api import async_register_command
from homeassistant.components.websocket_api.connection import ActiveConnection
from homeassistant.components.websocket_api.const import ERR_INVALID_FORMAT
from homeassistant.components.websocket_api.decorators import (
    async_response,
    websocket_command,
    ws_require_user,
)
from homeassistant.core import HomeAssistant, State, callback
from homeassistant.exceptions import HomeAssistantError

from ..const import DOMAIN
from ..voice.enrolment import (
    RATE,
    async_enrol_pcm,
    async_remove_voice,
    enrolment_role,
    entries_voices,
)

ENROL = f"{DOMAIN}/voice/enrol"
FORGET = f"{DOMAIN}/voice/forget"
MAX_CLIPS = 6
MAX_CLIP_SECONDS = 15
MAX_CLIP_BYTES = MAX_CLIP_SECONDS * RATE * 2
MAX_CLIP_BASE64 = (MAX_CLIP_BYTES + 2) // 3 * 4
ERROR_CODES = {
    "person_without_user": "person_without_user",
    "enrol_no_speech": "no_speech",
    "enrol_bad_audio": ERR_INVALID_FORMAT,
    "voice_model_unavailable": "voice_model_unavailable",
    "voiceprint_file": "voiceprint_file",
    "enrol_adult_needs_admin": "unauthorized",
}


@callback
def async_register_voice_commands(hass: HomeAssistant) -> None:
    """Offer the card's voice enrolment on HA's WebSocket API."""
    async_register_command(hass, websocket_enrol_voice)
    async_register_command(hass, websocket_forget_voice)


@websocket_command(
    {
        vol.Required("type"): ENROL,
        vol.Required("clips"): vol.All(
            [vol.All(str, vol.Length(min=1, max=MAX_CLIP_BASE64))],
            vol.Length(min=1, max=MAX_CLIPS),
        ),
    }
)
@ws_require_user(allow_system_user=False)
@async_response
async def websocket_enrol_voice(
    hass: HomeAssistant, connection: ActiveConnection, msg: dict[str, Any]
) -> None:
    """Enrol the signed-in user's voice from the clips the card recorded."""
    try:
        clips = [decode_clip(text) for text in msg["clips"]]
    except ValueError as err:
        connection.send_error(msg["id"], ERR_INVALID_FORMAT, str(err))
        return
    user = connection.user
    person = user_person(hass, user.id)
    if person is None:
        connection.send_error(msg["id"], "person_without_user", "no person is linked to this user")
        return
    voices = entries_voices(hass)

    async def named() -> AsyncIterator[tuple[str, bytes]]:
        """Yield each clip, named by its place."""
        for number, pcm in enumerate(clips, start=1):
            yield f"recording {number}", pcm

    try:
        role = enrolment_role(voices, user.id, None, trusted=user.is_admin)
        answer = await async_enrol_pcm(
            voices, named(), user_id=user.id, name=person.name, role=role
        )
    except HomeAssistantError as err:
        code = ERROR_CODES.get(err.translation_key or "", "unknown_error")
        connection.send_error(msg["id"], code, str(err))
        return
    given = (answer or {}).get("skipped")
    skipped = [str(name) for name in given] if isinstance(given, list) else []
    connection.send_result(msg["id"], {"samples": len(clips) - len(skipped), "skipped": skipped})


@websocket_command({vol.Required("type"): FORGET})
@ws_require_user(allow_system_user=False)
@async_response
async def websocket_forget_voice(
    hass: HomeAssistant, connection: ActiveConnection, msg: dict[str, Any]
) -> None:
    """Remove the signed-in user's own voiceprint from every loaded entry."""
    removed = await async_remove_voice(hass, connection.user.id)
    connection.send_result(msg["id"], {"removed": removed})


def decode_clip(text: str) -> bytes:
    """Return one clip's PCM from base64; raise ``ValueError`` when it is not usable PCM."""
    try:
        pcm = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ValueError("a recording is not base64") from err
    if not pcm or len(pcm) % 2:
        raise ValueError("a recording is not 16-bit PCM")
    if len(pcm) > MAX_CLIP_BYTES:
        raise ValueError(f"a recording is over {MAX_CLIP_SECONDS} seconds")
    return pcm


def user_person(hass: HomeAssistant, user_id: str) -> State | None:
    """Return the ``person`` entity linked to ``user_id``, or None."""
    for state in hass.states.async_all("person"):
        if state.attributes.get("user_id") == user_id:
            return state
    return None
