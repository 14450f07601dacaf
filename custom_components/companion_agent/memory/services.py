"""Memory services: remember, forget, roll back, export (what each persona remembers).

A persona is named by its conversation entity (or its id: a persona that was removed can
still be forgotten by it), a person by their ``person`` entity (its HA user); without a
person a memory belongs to the household. Every write says where it came from: the caller
(``service``), or an automation or script (``automation``). Errors are translated.

**Who may act on whose memories.** An automation or script (no user in the call's context)
and an HA administrator may act on every person's memories. A signed-in user who is not an
administrator acts only on their own memories and on the household's shared ones:
remembering, exporting, forgetting or rolling back another person's memories raises
``Unauthorized``, as does forgetting a whole persona. Forgetting a person removes their
enrolled voice too (``voiceprint_removed`` says whether there was one), memory or not.

**What export answers**: records and graph facts as data, newest first, one page at a time
(``offset``, ``limit``: 100 by default, at most 500): the memories (replaced conclusions
included), the graph's entities and relations, each with its id (what ``forget`` takes),
when it was said and where it came from (``provenance``: who, on which device, in which
conversation, from which ``statement`` — forgetting a memory forgets what its statement
left —, and ``via``: ``turn``, ``instruction``, ``service``, ``automation``, ``todo``,
``tool``, ``summary``), how many of each there are in all (``total``), and the
``next_offset`` (None on the last page).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial

import voluptuous as vol
from homeassistant.auth.permissions.const import POLICY_CONTROL, POLICY_READ
from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import (
    HomeAssistantError,
    ServiceValidationError,
    Unauthorized,
    UnknownUser,
)
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
from ..engine.memory import (
    HOUSEHOLD,
    MAX_PAGE,
    CompanionMemory,
    Forget,
    GraphItem,
    MemoryRecord,
    MemoryScope,
    Provenance,
    dump_provenance,
)
from ..runtime import CompanionConfigEntry, loaded_entries
from ..voice.enrolment import async_remove_voice

DEFAULT_PAGE = 100
MAX_OFFSET = 1_000_000
"""The furthest an export page may start (the service refuses more)."""
MAX_PAGES = 200
PERSONA = vol.All(cv.string, vol.Length(min=1, max=255))
"""A persona's conversation entity id, or the persona's (sub-entry) id."""


def _error(key: str) -> ServiceValidationError:
    """Return a translated validation error."""
    return ServiceValidationError(translation_domain=DOMAIN, translation_key=key)


def _persona(hass: HomeAssistant, persona: str) -> tuple[CompanionConfigEntry, str]:
    """Return the loaded entry and persona id a conversation entity (or a persona id) names."""
    entity = er.async_get(hass).async_get(persona) if persona.startswith("conversation.") else None
    for entry in loaded_entries(hass):
        if entity is not None and entity.platform == DOMAIN and entity.config_subentry_id:
            if entry.entry_id == entity.config_entry_id:
                return entry, entity.config_subentry_id
        elif entity is None and persona in _persona_ids(entry):
            return entry, persona
    raise _error("persona_not_found")


def _provenance(call: ServiceCall) -> Provenance:
    """Return who wrote through a service call: a person, or an automation or script."""
    user_id = call.context.user_id
    return Provenance(via="service" if user_id else "automation", person=user_id)


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
        record = await memory.remember(
            scope, call.data["text"], topic=call.data.get("topic"), provenance=_provenance(call)
        )
    except MemoryInputError as err:
        raise _error("memory_invalid") from err
    async_dispatcher_send(hass, signal_memory_changed(entry.entry_id))
    return {"queued": record is None, "memory": record_data(record) if record else None}


async def _async_forget(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Forget one memory by id, everything of a person, or everything of a persona.

    A persona that no longer exists (its sub-entry was removed) is forgotten by its id in
    every entry with memory.
    """
    given = [key for key in ("id", "person", "persona") if call.data.get(key)]
    if len(given) != 1:
        raise _error("forget_needs_one")
    limit = await async_caller_owner(hass, call)
    owner = HOUSEHOLD
    persona: tuple[CompanionConfigEntry, str] | None = None
    if "persona" in given:
        check_admin(call, limit)
        persona = _known_persona(hass, call.data["persona"])
    elif "person" in given:
        owner = _owner(hass, call.data["person"])
        check_owner(call, limit, owner)
        # Forgetting a person forgets their voice too, memory or not.
        voice = await async_remove_voice(hass, owner.removeprefix("user:"))
        if not _with_memory(hass):
            return {"forgotten": 0, "voiceprint_removed": voice}
    removed = 0
    for entry, memory in await _entries_for(hass, call, limit):
        environment = memory.settings.environment
        if "persona" in given:
            if persona is not None and persona[0] is not entry:
                continue
            persona_id = call.data["persona"] if persona is None else persona[1]
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
    if "person" in given:
        return {"forgotten": removed, "voiceprint_removed": voice}
    return {"forgotten": removed}


def _with_memory(hass: HomeAssistant) -> bool:
    """Say whether any loaded entry has memory."""
    return any(entry.runtime_data.engine.memory is not None for entry in loaded_entries(hass))


def _known_persona(hass: HomeAssistant, persona: str) -> tuple[CompanionConfigEntry, str] | None:
    """Return the entry and id of an existing persona; None for the id of a removed one."""
    try:
        return _persona(hass, persona)
    except ServiceValidationError:
        if persona.startswith("conversation."):
            raise  # an agent that is not ours, or gone: name it by its id instead
        return None


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
    """Return one page of what a persona remembers (of one person, or of all), newest first."""
    limit = await async_caller_owner(hass, call)
    entry, persona_id = _persona(hass, call.data["persona"])
    memory = _memory(entry)
    person = call.data.get("person")
    owner = None if person is None else _owner(hass, person)
    scopes = await async_export_scopes(hass, call, memory, persona_id, owner=owner, limit=limit)
    try:
        return await async_export_page(memory, scopes, call.data["offset"], call.data["limit"])
    except Exception as err:
        raise _unavailable(err) from err


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
                vol.Optional("persona"): PERSONA,
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
        schema=vol.Schema(
            {
                vol.Required("persona"): PERSONA,
                vol.Optional("person"): person,
                vol.Optional("offset", default=0): vol.All(
                    vol.Coerce(int), vol.Range(min=0, max=MAX_OFFSET)
                ),
                vol.Optional("limit", default=DEFAULT_PAGE): vol.All(
                    vol.Coerce(int), vol.Range(min=1, max=MAX_PAGE)
                ),
            }
        ),
        supports_response=SupportsResponse.ONLY,
    )


# Who may use the memory services on whose memories.
async def async_caller_owner(hass: HomeAssistant, call: ServiceCall) -> str | None:
    """Return the owner a non-admin caller is limited to (``user:<id>``); None: no limit."""
    user_id = call.context.user_id
    if user_id is None:
        return None
    user = await hass.auth.async_get_user(user_id)
    if user is None:
        raise UnknownUser(context=call.context)
    if user.is_admin:
        return None
    return f"user:{user.id}"


def check_owner(call: ServiceCall, limit: str | None, owner: str, *, read: bool = False) -> None:
    """Raise ``Unauthorized`` unless a caller limited to ``limit`` may use ``owner``'s."""
    if limit is not None and owner not in (limit, HOUSEHOLD):
        raise Unauthorized(context=call.context, permission=POLICY_READ if read else POLICY_CONTROL)


def check_admin(call: ServiceCall, limit: str | None) -> None:
    """Raise ``Unauthorized`` unless the caller may act on everyone's memories."""
    if limit is not None:
        raise Unauthorized(context=call.context, permission=POLICY_CONTROL)


async def async_may_touch(
    memory: CompanionMemory, persona_ids: Iterable[str], limit: str | None, record_id: str
) -> bool:
    """Say whether a caller limited to ``limit`` may touch record ``record_id`` in ``memory``.

    Without a limit, yes. With one, only when the record (or graph entity or relation) is
    one of the caller's own or the household's (of these personas).
    """
    if limit is None:
        return True
    ids = set(persona_ids)
    if not record_id.startswith(("rel-", "ent-")):
        record = await memory.get(record_id)
        return (
            record is not None
            and record.scope.agent_id in ids
            and (record.scope.owner in (limit, HOUSEHOLD))
        )
    environment = memory.settings.environment
    scopes = [
        MemoryScope(agent_id=persona_id, owner=owner, environment=environment)
        for persona_id in ids
        for owner in (limit, HOUSEHOLD)
    ]
    for page in range(MAX_PAGES):  # the graph's ids are hashes: look through its pages
        _, graph = await memory.export(scopes, offset=page * MAX_PAGE, limit=MAX_PAGE)
        if any(item.id == record_id for item in (*graph.entities, *graph.relations)):
            return True
        if not graph.entities and not graph.relations:
            return False
    return False


# What export answers.
def provenance_data(provenance: Provenance) -> JsonObjectType:
    """Return a provenance as service response data."""
    return dict(dump_provenance(provenance))


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
        "provenance": provenance_data(record.provenance),
    }


def graph_data(item: GraphItem) -> JsonObjectType:
    """Return an exported entity or relation as service response data."""
    data: JsonObjectType = {
        "id": item.id,
        "persona": item.scope.agent_id,
        "owner": item.scope.owner,
        "source": item.source,
        "said_at": item.at.isoformat() if item.at else None,
        "provenance": provenance_data(item.provenance),
    }
    if item.relation is None:
        data["name"] = item.name
    else:
        data["subject"] = item.relation.subject
        data["predicate"] = item.relation.predicate
        data["object"] = item.relation.object
    return data


async def async_export_page(
    memory: CompanionMemory, scopes: Sequence[MemoryScope], offset: int, limit: int
) -> JsonObjectType:
    """Return one export page of ``scopes``: memories, entities and relations, newest first."""
    limit = max(1, min(limit, MAX_PAGE))
    page, graph = await memory.export(scopes, offset=offset, limit=limit)
    totals = (page.total, graph.total_entities, graph.total_relations)
    return {
        "memories": [record_data(record) for record in page.records],
        "entities": [graph_data(item) for item in graph.entities],
        "relations": [graph_data(item) for item in graph.relations],
        "total": {"memories": totals[0], "entities": totals[1], "relations": totals[2]},
        "offset": offset,
        "limit": limit,
        "next_offset": offset + limit if any(total > offset + limit for total in totals) else None,
    }


async def async_export_scopes(
    hass: HomeAssistant,
    call: ServiceCall,
    memory: CompanionMemory,
    persona_id: str,
    *,
    owner: str | None,
    limit: str | None,
) -> list[MemoryScope]:
    """Return the scopes to export: one owner's, else the household's and every user's.

    A caller limited to their own memories gets, without a person, their own and the
    household's; another person's are refused.
    """
    environment = memory.settings.environment
    if owner is not None:
        owners = [owner]
    elif limit is not None:
        owners = [HOUSEHOLD, limit]
    else:
        users = await hass.auth.async_get_users()
        owners = [HOUSEHOLD, *(f"user:{user.id}" for user in users)]
    for one in owners:
        check_owner(call, limit, one, read=True)
    return [MemoryScope(agent_id=persona_id, owner=o, environment=environment) for o in owners]
