"""Who may use the memory services on whose memories.

An automation or script (no user in the call's context) and an HA administrator may act
on every person's memories. A signed-in user who is not an administrator acts only on
their own memories and on the household's shared ones: remembering, exporting, forgetting
or rolling back another person's memories raises ``Unauthorized``, as does forgetting a
whole persona.
"""

from __future__ import annotations

from collections.abc import Iterable

from homeassistant.auth.permissions.const import POLICY_CONTROL, POLICY_READ
from homeassistant.core import HomeAssistant, ServiceCall
from homeassistant.exceptions import Unauthorized, UnknownUser

from ..engine.memory import HOUSEHOLD, MAX_PAGE, CompanionMemory, MemoryScope

MAX_PAGES = 200


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
