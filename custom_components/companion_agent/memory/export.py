"""What the memory services answer: records and graph facts as data, and the export page.

``export_memories`` answers newest first, one page at a time (``offset``, ``limit``: 100 by
default, at most 500): the memories (replaced conclusions included), the graph's entities
and relations, each with its id (what ``forget`` takes), when it was said and where it came
from (``provenance``: who, on which device, in which conversation, from which ``statement``
— forgetting a memory forgets what its statement left —, and ``via``: ``turn``,
``instruction``, ``service``, ``automation``, ``todo``, ``tool``, ``summary``), how many of
each there are in all (``total``), and the ``next_offset`` (None on the last page).
"""

from __future__ import annotations

from collections.abc import Sequence

from homeassistant.core import HomeAssistant, ServiceCall
from homeassistant.util.json import JsonObjectType

from ..engine.memory import (
    HOUSEHOLD,
    MAX_PAGE,
    CompanionMemory,
    GraphItem,
    MemoryRecord,
    MemoryScope,
    Provenance,
    dump_provenance,
)
from .access import check_owner

DEFAULT_PAGE = 100
MAX_OFFSET = 1_000_000
"""The furthest an export page may start (the service refuses more)."""


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
