"""Forgetting reaches what still waits: the outbox's queued writes of that person or persona."""

from __future__ import annotations

from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from custom_components.companion_agent.engine.memory.models import Forget, MemoryScope
from custom_components.companion_agent.engine.memory.outbox.payloads import dump_scope, load_scope

ALICE = MemoryScope(agent_id="p1", owner="user:alice", environment="test")
BOB = MemoryScope(agent_id="p1", owner="user:bob", environment="test")
BOB_ELSEWHERE = MemoryScope(agent_id="p2", owner="user:bob", environment="test")


async def queued_owners(memory: CompanionMemory) -> list[str]:
    """Return the persona/owner of each waiting entry, oldest first."""
    owners: list[str] = []
    for entry in await memory.outbox.entries():
        data = entry.payload
        memory_row = data.get("memory")
        row = memory_row["scope"] if isinstance(memory_row, dict) else data["scope"]
        scope = load_scope(row)
        owners.append(f"{scope.agent_id}/{scope.owner}")
    return owners


async def test_forget_drops_the_queued_writes_it_names_and_keeps_the_rest(
    memory: CompanionMemory,
) -> None:
    """With the store away, forgetting Alice (then persona p2) leaves only Bob's p1 entries."""
    await memory.outbox.close()  # nothing drains: what is queued stays to be looked at
    for scope in (ALICE, BOB, BOB_ELSEWHERE):
        await memory.after_turn(scope, "My cat is Miso.", "Nice.", source="c", model=None)
    await memory.outbox.put("state", {"memory": {"scope": dump_scope(ALICE), "text": "x"}})
    await memory.forget(Forget(owner="user:alice", environment="test"))
    assert await queued_owners(memory) == ["p1/user:bob", "p2/user:bob"]
    await memory.forget(Forget(agent_id="p2", environment="test"))
    assert await queued_owners(memory) == ["p1/user:bob"]
    await memory.forget(Forget(owner="user:bob", environment="production"))
    assert await queued_owners(memory) == ["p1/user:bob"]  # another environment's forget
