"""Services: reload the library; confirm a held action; speak first; memory; enrolled voices."""

from __future__ import annotations

import voluptuous as vol
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.dispatcher import async_dispatcher_send

from .agent.confirmations import async_confirm_action
from .const import (
    DOMAIN,
    SERVICE_CONFIRM_ACTION,
    SERVICE_ENROLL_VOICE,
    SERVICE_FORGET_VOICE,
    SERVICE_RELOAD,
    SERVICE_START_CHAT,
    signal_library_reloaded,
)
from .memory.services import async_setup_memory_services
from .proactive.speak import async_handle_start_chat
from .repairs import async_sync_load_problems
from .runtime import loaded_entries
from .voice.enrolment import MAX_FILES, async_enroll_voice, async_forget_voice


@callback
def async_setup_services(hass: HomeAssistant) -> None:
    """Register the integration's services once."""

    async def reload(call: ServiceCall) -> None:
        """Reload plugins and profiles; running turns keep what they started with."""
        entries = loaded_entries(hass)
        for entry in entries:
            engine = entry.runtime_data.engine
            await engine.reload()
            async_sync_load_problems(hass, engine.problems)
            async_dispatcher_send(hass, signal_library_reloaded(entry.entry_id))

    async def confirm(call: ServiceCall) -> ServiceResponse:
        """Approve or deny a held call by its token."""
        return await async_confirm_action(hass, call)

    hass.services.async_register(DOMAIN, SERVICE_RELOAD, reload)
    hass.services.async_register(
        DOMAIN,
        SERVICE_CONFIRM_ACTION,
        confirm,
        schema=vol.Schema(
            {vol.Required("token"): cv.string, vol.Optional("approve", default=True): cv.boolean}
        ),
        supports_response=SupportsResponse.OPTIONAL,
    )

    async def start_chat(call: ServiceCall) -> ServiceResponse:
        """Speak first as a persona on satellites or media players."""
        return await async_handle_start_chat(hass, call)

    hass.services.async_register(
        DOMAIN,
        SERVICE_START_CHAT,
        start_chat,
        schema=vol.Schema(
            {
                vol.Required("targets"): cv.entity_ids,
                vol.Optional("instruction"): vol.All(cv.string, vol.Length(max=2000)),
                vol.Optional("topic"): vol.All(cv.string, vol.Length(max=500)),
                vol.Optional("persona"): cv.string,
                vol.Optional("preannounce", default=True): cv.boolean,
            }
        ),
        supports_response=SupportsResponse.OPTIONAL,
    )
    async_setup_memory_services(hass)

    async def enroll_voice(call: ServiceCall) -> ServiceResponse:
        """Enrol a person's voice from audio files or at a satellite."""
        return await async_enroll_voice(hass, call)

    async def forget_voice(call: ServiceCall) -> ServiceResponse:
        """Remove a person's enrolled voice."""
        return await async_forget_voice(hass, call)

    hass.services.async_register(
        DOMAIN,
        SERVICE_ENROLL_VOICE,
        enroll_voice,
        schema=vol.Schema(
            {
                vol.Required("person"): cv.entity_domain("person"),
                vol.Optional("role"): vol.In(("adult", "child")),
                vol.Optional("satellite"): cv.entity_domain("assist_satellite"),
                vol.Optional("audio"): vol.All(
                    cv.ensure_list, [cv.string], vol.Length(max=MAX_FILES)
                ),
            }
        ),
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_FORGET_VOICE,
        forget_voice,
        schema=vol.Schema({vol.Required("person"): cv.entity_domain("person")}),
        supports_response=SupportsResponse.OPTIONAL,
    )
