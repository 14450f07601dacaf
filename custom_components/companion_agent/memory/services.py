"""Memory services: remember, forget, roll back, export (what each persona remembers).

A persona is named by its conversation entity, a person by their ``person`` entity (its HA
user); without a person a memory belongs to the household. Errors are translated. Who may
act on whose memories is ``memory_access``'s: a non-admin user only on their own and the
household's.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import voluptuous as vol
from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.util.json import JsonObjectType

from ..const import (
    DOMAIN,
    SERVICE_EXPORT_MEMORIES,
    SERVICE_FORGET,
    SERVICE_REMEMBER,
    SERVICE_ROLLBACK_MEMORY,
    SUBENTRY_CONVERSATION,
    signal_memory_changed,
)
from ..engine.errors import MemoryInputError
from ..engine.memory import HOUSEHOLD, CompanionMemory, Forget, MemoryRecord, MemoryScope
from ..runtime import CompanionConfigEntry, loaded_entries
from .access import async_caller_owner, async_may_touch, check_admin, check_owner

MAX_EXPORT = 2000


def record_data(record: MemoryRecord) -> JsonObjectType:
    """Return a record as service response data."""
    return {
        "id": record.id,
        "persona": record.scope.agent_id,
        "owner": record.scope.owner,
        "kind": record.kind,
        "topic": record.topic,
        "text": record.text,
        "source": record.source,
        "created_at": record.created_at.isoformat(),
        "valid_from": record.valid_from.isoformat(),
        "valid_until": record.valid_until.isoformat() if record.valid_until else None,
        "superseded_by": record.superseded_by,
    }


def _error(key: str) -> ServiceValidationError:
    """Return a translated validation error."""
    return ServiceValidationError(translation_domain=DOMAIN, translation_key=key)


def _persona(hass: HomeAssistant, entity_id: str) -> tuple[CompanionConfigEntry, str]:
    """Return the loaded entry and subentry id of a persona's conversation entity."""
    entity = er.async_get(hass).async_get(entity_id)
    if entity is None or entity.platform != DOMAIN or entity.config_subentry_id is None:
        raise _error("persona_not_found")
    for entry in loaded_entries(hass):
        if entry.entry_id == entity.config_entry_id:
            return entry, entity.config_subentry_id
    raise _error("persona_not_found")


def _persona_ids(entry: CompanionConfigEntry) -> list[str]:
    """Return the entry's persona (conversation subentry) ids."""
    return [
        sub.subentry_id
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    ]


def _memory(entry: CompanionConfigEntry) -> CompanionMemory:
    """Return the entry's memory, or the translated error when it is off."""
    if entry.runtime_data.engine.memory is None:
        raise _error("memory_off")
    return entry.runtime_data.engine.memory


def _owner(hass: HomeAssistant, person: str | None) -> str:
    """Return the owner a ``person`` entity stands for (its HA user), else the household."""
    if person is None:
        return HOUSEHOLD
    state = hass.states.get(person)
    user_id = state.attributes.get("user_id") if state is not None else None
    if not user_id:
        raise _error("person_without_user")
    return f"user:{user_id}"


def _unavailable(err: Exception) -> HomeAssistantError:
    """Return the translated error for a backend that did not answer."""
    return HomeAssistantError(
        translation_domain=DOMAIN,
        translation_key="memory_unavailable",
        translation_placeholders={"error": type(err).__name__},
    )


async def _async_remember(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Store a memory for a persona (a conclusion when a topic is given)."""
    limit = await async_caller_owner(hass, call)
    entry, persona_id = _persona(hass, call.data["persona"])
    memory = _memory(entry)
    owner = _owner(hass, call.data.get("person"))
    check_owner(call, limit, owner)
    scope = MemoryScope(agent_id=persona_id, owner=owner, environment=memory.settings.environment)
    try:
        record = await memory.remember(scope, call.data["text"], topic=call.data.get("topic"))
    except MemoryInputError as err:
        raise _error("memory_invalid") from err
    async_dispatcher_send(hass, signal_memory_changed(entry.entry_id))
    return {"queued": record is None, "memory": record_data(record) if record else None}


async def _async_forget(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Forget one memory by id, everything of a person, or everything of a persona."""
    given = [key for key in ("id", "person", "persona") if call.data.get(key)]
    if len(given) != 1:
        raise _error("forget_needs_one")
    limit = await async_caller_owner(hass, call)
    owner = HOUSEHOLD
    if "persona" in given:
        check_admin(call, limit)
    elif "person" in given:
        owner = _owner(hass, call.data["person"])
        check_owner(call, limit, owner)
    entries = await _entries_for(hass, call, limit)
    removed = 0
    for entry, memory in entries:
        environment = memory.settings.environment
        if "persona" in given:
            owner_entry, persona_id = _persona(hass, call.data["persona"])
            if owner_entry is not entry:
                continue
            what = Forget(agent_id=persona_id, environment=environment)
        elif "person" in given:
            what = Forget(owner=owner, environment=environment)
        else:
            what = Forget(record_id=call.data["id"], environment=environment)
        try:
            removed += await memory.forget(what)
        except Exception as err:
            raise _unavailable(err) from err
        async_dispatcher_send(hass, signal_memory_changed(entry.entry_id))
    return {"forgotten": removed}


async def _entries_for(
    hass: HomeAssistant, call: ServiceCall, limit: str | None
) -> list[tuple[CompanionConfigEntry, CompanionMemory]]:
    """Return the entries (with memory on) a call by id may act on.

    A caller limited to their own memories gets only the entries holding the record as
    theirs or the household's; none raises ``Unauthorized`` (another's, or no such id).
    """
    entries = [
        (entry, entry.runtime_data.engine.memory)
        for entry in loaded_entries(hass)
        if entry.runtime_data.engine.memory is not None
    ]
    record_id = call.data.get("id")
    if limit is None or not record_id:
        return entries
    try:
        mine = [
            (entry, memory)
            for entry, memory in entries
            if await async_may_touch(memory, _persona_ids(entry), limit, record_id)
        ]
    except Exception as err:
        raise _unavailable(err) from err
    if not mine:
        check_admin(call, limit)  # raises: the caller is limited and the record is not theirs
    return mine


async def _async_rollback(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Retire a conclusion and bring back the one it superseded."""
    limit = await async_caller_owner(hass, call)
    for entry, memory in await _entries_for(hass, call, limit):
        try:
            back = await memory.rollback(call.data["id"])
        except Exception as err:
            raise _unavailable(err) from err
        if back is not None:
            async_dispatcher_send(hass, signal_memory_changed(entry.entry_id))
            return {"current": record_data(back)}
    raise _error("memory_not_found")


async def _async_export(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Return what a persona remembers (of one person, or of all known people)."""
    limit = await async_caller_owner(hass, call)
    entry, persona_id = _persona(hass, call.data["persona"])
    memory = _memory(entry)
    scopes = await _scopes(hass, memory, persona_id, call.data.get("person"), limit)
    for scope in scopes:
        check_owner(call, limit, scope.owner, read=True)
    try:
        records = await memory.export(scopes)
    except Exception as err:
        raise _unavailable(err) from err
    return {
        "memories": [record_data(r) for r in records[:MAX_EXPORT]],
        "truncated": len(records) > MAX_EXPORT,
    }


def async_setup_memory_services(hass: HomeAssistant) -> None:
    """Register the memory services once."""
    persona = cv.entity_domain("conversation")
    person = cv.entity_domain("person")
    hass.services.async_register(
        DOMAIN,
        SERVICE_REMEMBER,
        partial(_async_remember, hass),
        schema=vol.Schema(
            {
                vol.Required("text"): vol.All(cv.string, vol.Length(min=1, max=2000)),
                vol.Required("persona"): persona,
                vol.Optional("person"): person,
                vol.Optional("topic"): vol.All(cv.string, vol.Length(min=1, max=80)),
            }
        ),
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_FORGET,
        partial(_async_forget, hass),
        schema=vol.Schema(
            {
                vol.Optional("id"): cv.string,
                vol.Optional("person"): person,
                vol.Optional("persona"): persona,
            }
        ),
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_ROLLBACK_MEMORY,
        partial(_async_rollback, hass),
        schema=vol.Schema({vol.Required("id"): cv.string}),
        supports_response=SupportsResponse.OPTIONAL,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_EXPORT_MEMORIES,
        partial(_async_export, hass),
        schema=vol.Schema({vol.Required("persona"): persona, vol.Optional("person"): person}),
        supports_response=SupportsResponse.ONLY,
    )


async def _scopes(
    hass: HomeAssistant,
    memory: CompanionMemory,
    persona_id: str,
    person: str | None,
    limit: str | None,
) -> Sequence[MemoryScope]:
    """Return the scopes to export: one person's, else the household's and every user's.

    A caller limited to their own memories gets, without a person, their own and the
    household's.
    """
    environment = memory.settings.environment
    if person is not None:
        owners = [_owner(hass, person)]
    elif limit is not None:
        owners = [HOUSEHOLD, limit]
    else:
        users = await hass.auth.async_get_users()
        owners = [HOUSEHOLD, *(f"user:{user.id}" for user in users)]
    return [MemoryScope(agent_id=persona_id, owner=o, environment=environment) for o in owners]
