"""The blocking work ``Mem0Store`` does with mem0 (run on its worker thread only).

Each function takes the open mem0 ``Memory`` (and, where it dates something, the store's
clock) and works through mem0's API, except that metadata-only updates go to mem0's vector
store directly (``Memory.update`` would embed the unchanged text again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ....errors import MemoryBackendError
from ...models import ExportPage, MemoryHit, MemoryKind, MemoryRecord, MemoryScope
from ..bounds import MemoryBounds, ScopeKey
from ..inputs import CheckedMemory
from . import records
from .setup import BACKEND, Item, Mem0Memory, results

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

type Clock = Callable[[], datetime]

MAX_STATES = 50
FORGET_BATCH = 500
MAX_LISTED = 100_000
MAX_HISTORY = 1000


def add_all(memory: Mem0Memory, prepared: Sequence[CheckedMemory], now: Clock) -> list[str]:
    """Add each memory in turn and return their ids; on a failure, delete what was added."""
    added: list[str] = []
    try:
        for one in prepared:
            added.append(insert(memory, one, now))
    except BaseException:
        for record_id in added:
            memory.delete(record_id)
        raise
    return added


def insert(memory: Mem0Memory, one: CheckedMemory, now: Clock) -> str:
    """Add one record (a state retires the current one on its topic); return its id."""
    current: list[Item] = []
    if one.kind == "state" and one.topic_key is not None:
        filters = {**records.scope_filters(one.scope), "kind": "state",
                   "topic_key": one.topic_key, "current": True}  # fmt: skip
        current = results(memory.get_all(filters=filters, top_k=MAX_STATES, show_expired=True))
    newest = max(current, key=_valid_from, default=None)
    meta = records.metadata(one, now(), None if newest is None else str(newest["id"]))
    answer = memory.add([{"role": "user", "content": one.text}],
                        user_id=records.mem0_id(one.scope.owner),
                        agent_id=records.mem0_id(one.scope.agent_id),
                        metadata=meta, infer=False)  # fmt: skip
    (item,) = results(answer)
    record_id = str(item["id"])
    for old in current:
        memory.vector_store.update(str(old["id"]), None, records.retired(now(), record_id))
    return record_id


def read(memory: Mem0Memory, record_id: str) -> MemoryRecord:
    """Return one record, which must exist."""
    found = records.record(memory.get(record_id))
    if found is None:
        raise MemoryBackendError(f"record {record_id} vanished", backend=BACKEND, problem="failed")
    return found


def rollback(
    memory: Mem0Memory, record_id: str, environment: str, now: Clock
) -> MemoryRecord | None:
    """Retire a current state of ``environment``, restore its predecessor and return it."""
    item = memory.get(record_id)
    found = records.record(item)
    if found is None or found.kind != "state" or not found.current:
        return None
    if found.scope.environment != environment:  # never across environments
        return None
    memory.vector_store.update(record_id, None, records.retired(now(), None))
    previous = records.supersedes(item)
    if previous is None or memory.get(previous) is None:
        return None
    memory.vector_store.update(previous, None, records.RESTORED)
    return records.record(memory.get(previous))


def search(
    memory: Mem0Memory,
    text: str,
    scopes: Sequence[MemoryScope],
    extra: records.Metadata,
    limit: int,
) -> list[MemoryHit]:
    """Search each scope, then keep the ``limit`` best across them."""
    hits: list[MemoryHit] = []
    for scope in scopes:
        filters = {**records.scope_filters(scope), **extra}
        for item in results(memory.search(text, top_k=limit, filters=filters)):
            found = records.record(item)
            score = item.get("score")
            if found is not None and isinstance(score, int | float):
                hits.append(MemoryHit(record=found, score=float(score), channel=found.kind))
    hits.sort(key=lambda hit: hit.score, reverse=True)
    return hits[:limit]


def current_states(memory: Mem0Memory, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
    """Return the current states of ``scopes``, newest first, at most ``MAX_STATES``."""
    found: list[MemoryRecord] = []
    for scope in scopes:
        filters = {**records.scope_filters(scope), "kind": "state", "current": True}
        found.extend(listed(memory, filters, MAX_STATES))
    found.sort(key=lambda r: (r.valid_from, r.created_at), reverse=True)
    return found[:MAX_STATES]


def get(memory: Mem0Memory, record_id: str, environment: str) -> MemoryRecord | None:
    """Return the record ``record_id`` of ``environment``, or None."""
    item = memory.get(record_id)
    return records.record(item) if records.environment(item) == environment else None


def export(
    memory: Mem0Memory, scopes: Sequence[MemoryScope], offset: int, limit: int
) -> ExportPage:
    """Return a page of the records of ``scopes`` (read, then sorted newest first)."""
    found: list[MemoryRecord] = []
    for scope in scopes:
        found.extend(listed(memory, records.scope_filters(scope), MAX_LISTED))
    found.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    return ExportPage(records=tuple(found[offset : offset + limit]), total=len(found))


def listed(memory: Mem0Memory, filters: records.Metadata, top: int) -> list[MemoryRecord]:
    """Return the records ``filters`` match (at most ``top``)."""
    answer = memory.get_all(filters=filters, top_k=top, show_expired=True)
    return [r for r in map(records.record, results(answer)) if r is not None]


def forget_history(memory: Mem0Memory, record_id: str, environment: str) -> int:
    """Delete ``record_id`` and every state it superseded, directly or not."""
    gone = 0
    next_id: str | None = record_id
    while next_id is not None and records.is_record_id(next_id) and gone < MAX_HISTORY:
        item = memory.get(next_id)
        if item is None or records.environment(item) != environment:
            break
        memory.delete(next_id)
        gone += 1
        next_id = records.supersedes(item)
    return gone


def forget_statement(memory: Mem0Memory, filters: Sequence[records.Metadata]) -> int:
    """Delete every record one of ``filters`` matches, each alone, as if never said; return
    how many.

    A current conclusion among them gives its place back to the one it superseded (unless
    that goes too).
    """
    found: dict[str, Item] = {}
    for one in filters:
        for item in results(memory.get_all(filters=one, top_k=MAX_LISTED, show_expired=True)):
            found.setdefault(str(item.get("id")), item)
    for record_id, item in found.items():
        record = records.record(item)
        older = records.supersedes(item)
        if record is None or not record.current or older is None or older in found:
            continue
        before = records.record(memory.get(older)) if records.is_record_id(older) else None
        if before is not None and before.superseded_by == record_id:
            memory.vector_store.update(older, None, records.RESTORED)
    for record_id in found:
        memory.delete(record_id)
    return len(found)


def forget_matching(memory: Mem0Memory, filters: records.Metadata, before: datetime) -> int:
    """Delete every record ``filters`` match said at or before ``before``; return how many.

    A batch at a time; records said later (after a forget) stay.
    """
    gone, top = 0, FORGET_BATCH
    while batch := results(memory.get_all(filters=filters, top_k=top, show_expired=True)):
        old = [item for item in batch if _said_by(item, before)]
        for item in old:
            memory.delete(str(item.get("id")))
        gone += len(old)
        if not old:  # what is left is newer: look further, or stop at the end
            if len(batch) < top or top >= MAX_LISTED:
                break
            top *= 2
    return gone


def _said_by(item: Item, before: datetime) -> bool:
    """Say whether an item was said at or before ``before`` (one not ours: yes)."""
    found = records.record(item)
    return found is None or found.valid_from <= before


def prune_scope(
    memory: Mem0Memory, client: QdrantClient, collection: str, key: ScopeKey, bounds: MemoryBounds
) -> None:
    """Delete a scope's oldest details and summaries beyond their caps."""
    agent, environment, owner = key
    scope = MemoryScope(agent_id=agent, owner=owner, environment=environment)
    prune(memory, client, collection, scope, kind="detail", cap=bounds.details)
    prune(memory, client, collection, scope, kind="summary", cap=bounds.summaries)


def prune(
    memory: Mem0Memory, client: QdrantClient, collection: str, scope: MemoryScope, *,
    kind: MemoryKind, cap: int,
) -> int:  # fmt: skip
    """Delete the scope's oldest records of ``kind`` beyond ``cap``; return how many went."""
    from qdrant_client import models  # noqa: PLC0415 - loaded by open, off the loop

    filters: records.Metadata = {**records.scope_filters(scope), "kind": kind}
    must: list[models.Condition] = [
        models.FieldCondition(key=key, match=models.MatchValue(value=value))
        for key, value in filters.items()
        if isinstance(value, str)
    ]
    number = client.count(collection, count_filter=models.Filter(must=must), exact=True).count
    if number <= cap:
        return 0
    found = listed(memory, filters, number)
    found.sort(key=lambda record: record.created_at)
    for record in found[: len(found) - cap]:
        memory.delete(record.id)
    return max(0, len(found) - cap)


def count(client: QdrantClient, collection: str) -> dict[str, int]:
    """Count the collection's records by kind and by current/retired (payload filters)."""
    from qdrant_client import models  # noqa: PLC0415 - loaded by open, off the loop

    def number(key: str, value: str | bool) -> int:
        """Count the points whose payload ``key`` is ``value``."""
        match = models.FieldCondition(key=key, match=models.MatchValue(value=value))
        return client.count(collection, count_filter=models.Filter(must=[match]), exact=True).count

    kinds: tuple[MemoryKind, ...] = ("detail", "state", "summary")
    figures: dict[str, int] = {kind: number("kind", kind) for kind in kinds}
    figures["current"] = number("current", True)
    figures["retired"] = number("current", False)
    return figures


def _valid_from(item: Item) -> datetime:
    """Return when the item's record began to hold (the oldest time when unknown)."""
    found = records.record(item)
    return datetime.min.replace(tzinfo=UTC) if found is None else found.valid_from
