"""Forget, everywhere, and for good: what ``CompanionMemory.forget`` does, in order.

1. The tombstones (``tombstones``) are written to the outbox file, which in the same
   transaction drops (or trims) every waiting write they cover — on disk first, so a
   restart keeps them — then join the ledger every later write checks before and after.
2. The store and the graph delete what the forget names (said at or before its time; the
   embedded store keeps its own tombstone in the same transaction).
3. For a person or a persona: their exchanges (conversations and recent windows) go from
   the exchange store, which refuses any turn begun before the forget from then on; their
   summaries in progress are cancelled; the entity names extraction found are dropped.

A record id is resolved first (its scope and topic, or its text), so a conclusion forgotten
while its exchange is being extracted does not come back either; a graph id (``rel-…``,
``ent-…``) names its entity or relation.

A memory is forgotten with its statement (``provenance``): the statement leaves a tombstone
of its own (whatever its extraction still writes is refused, whatever its content), the
records derived from it go from the store, what it alone said goes from the graph (an
entity or relation another statement also said stays), and the turn itself goes from the
exchange store (which refuses it if it is stored later).
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .models import Forget, MemoryScope
from .outbox.tombstones import statement_forget, tombstone_of
from .provenance import LEGACY
from .reads import CALL_TIMEOUT

if TYPE_CHECKING:
    from .companion import CompanionMemory


async def forget_everywhere(
    memory: CompanionMemory, what: Forget, names: MutableMapping[MemoryScope, list[str]]
) -> int:
    """Forget ``what`` in every part of ``memory``; return how many records and relations went."""
    what = replace(what, at=what.at or datetime.now(UTC))
    graph_id = what.record_id is not None and what.record_id.startswith(("rel-", "ent-"))
    record = None
    if what.record_id is not None and not graph_id:
        async with asyncio.timeout(CALL_TIMEOUT):
            record = await memory.store.get(what.record_id, what.environment)
    statement = None if record is None else statement_forget(record, what.moment)
    tombstone = tombstone_of(what, record)
    said = None if statement is None else tombstone_of(statement)
    tombstones = [t for t in (tombstone, said) if t is not None]
    if tombstones:
        await memory.outbox.forget(tombstones)
        for each in tombstones:
            memory.ledger.add(each)
    async with asyncio.timeout(CALL_TIMEOUT):
        removed = await memory.store.forget(what)
        if memory.graph is not None and (what.record_id is None or graph_id):
            removed += await memory.graph.forget(what)
    if statement is not None:
        removed += await _forget_statement(memory, statement)
    if tombstone is None or tombstone.key is not None:
        return removed
    if what.environment == memory.settings.environment:  # the exchanges are this one's
        await memory.exchanges.forget(
            persona_id=what.agent_id, owner=what.owner, at=what.moment.timestamp()
        )
    memory.summaries.forget(tombstone)
    for scope in [scope for scope in names if tombstone.covers(scope, None)]:
        del names[scope]
    return removed


async def _forget_statement(memory: CompanionMemory, statement: Forget) -> int:
    """Delete what one statement left: its records, its graph facts, its turn."""
    assert statement.statement is not None
    assert statement.agent_id is not None
    async with asyncio.timeout(CALL_TIMEOUT):
        removed = await memory.store.forget(statement)
        if memory.graph is not None:
            removed += await memory.graph.forget(statement)
    mine = statement.environment == memory.settings.environment
    if mine and not statement.statement.startswith(LEGACY):  # a turn's trace id
        await memory.exchanges.forget_turn(
            statement.agent_id, statement.statement, statement.moment.timestamp()
        )
    return removed
