"""The durable outbox: survives restarts and outages, sets poison aside, stays bounded."""

from __future__ import annotations

import asyncio
from pathlib import Path

from custom_components.companion_agent.engine.errors import MemoryUnavailableError
from custom_components.companion_agent.engine.memory.outbox import (
    FollowUps,
    MemoryOutbox,
    OutboxEntry,
)


def quick(path: Path, **kwargs: int) -> MemoryOutbox:
    """Return an outbox that retries within milliseconds."""
    return MemoryOutbox(path, first_delay=0.01, max_delay=0.04, **kwargs)


class Backend:
    """A processor that records what it took; it can be down, and some entries are bad."""

    def __init__(self) -> None:
        """Up, nothing taken."""
        self.up = True
        self.taken: list[str] = []
        self.bad: set[str] = set()
        self.calls = 0

    async def process(self, entry: OutboxEntry) -> FollowUps:
        """Take an entry; fail when down or when it is a bad one."""
        self.calls += 1
        text = str(entry.payload["text"])
        if not self.up:
            raise MemoryUnavailableError("down")
        if text in self.bad:
            raise ValueError("the store refuses this one")
        self.taken.append(text)
        if text.startswith("split:"):
            return [("note", {"text": part}) for part in text[6:].split(",")]
        return ()

    async def probe(self) -> None:
        """Answer when up."""
        if not self.up:
            raise ConnectionError("down")


async def test_entries_survive_a_restart_and_drain_in_order(tmp_path: Path) -> None:
    """What was put before a restart is processed after it, oldest first, exactly once."""
    path = tmp_path / "outbox.db"
    first = quick(path)
    for text in ("one", "two", "three"):
        assert await first.put("note", {"text": text})
    await first.close()

    backend = Backend()
    second = quick(path)
    second.start(backend.process, backend.probe)
    assert await second.drained(5)
    assert backend.taken == ["one", "two", "three"]
    assert (await second.figures())["waiting"] == 0
    await second.close()


async def test_outage_loses_nothing_and_backs_off(tmp_path: Path) -> None:
    """While the backend is down entries wait (no try is counted); they go once it is back."""
    backend = Backend()
    backend.up = False
    outbox = quick(tmp_path / "outbox.db", max_attempts=2)
    outbox.start(backend.process, backend.probe)
    await outbox.put("note", {"text": "kept"})
    await asyncio.sleep(0.3)
    assert backend.taken == []
    assert backend.calls < 30  # backed off, not spinning
    assert (await outbox.figures())["waiting"] == 1
    assert (await outbox.entries())[0].attempts == 0

    backend.up = True
    outbox.kick()
    assert await outbox.drained(5)
    assert backend.taken == ["kept"]
    assert (await outbox.figures())["set_aside"] == 0
    await outbox.close()


async def test_poison_entry_is_set_aside_and_never_blocks(tmp_path: Path) -> None:
    """An entry the live backend keeps refusing is moved aside; the rest go through."""
    backend = Backend()
    backend.bad = {"poison"}
    outbox = quick(tmp_path / "outbox.db", max_attempts=3)
    outbox.start(backend.process, backend.probe)
    for text in ("poison", "a", "b"):
        await outbox.put("note", {"text": text})
    assert await outbox.drained(5)
    assert backend.taken == ["a", "b"]
    assert await outbox.figures() == {"waiting": 0, "set_aside": 1, "refused": 0}
    await outbox.close()


async def test_follow_ups_replace_their_entry(tmp_path: Path) -> None:
    """A processed entry leaves its follow-ups in the queue, processed after it."""
    backend = Backend()
    outbox = quick(tmp_path / "outbox.db")
    outbox.start(backend.process, backend.probe)
    await outbox.put("note", {"text": "split:x,y"})
    assert await outbox.drained(5)
    assert backend.taken == ["split:x,y", "x", "y"]
    await outbox.close()


async def test_bounded(tmp_path: Path) -> None:
    """Past its bound the outbox refuses new entries and counts them."""
    outbox = quick(tmp_path / "outbox.db", max_entries=2)
    assert await outbox.put("note", {"text": "1"})
    assert await outbox.put("note", {"text": "2"})
    assert not await outbox.put("note", {"text": "3"})
    assert await outbox.figures() == {"waiting": 2, "set_aside": 0, "refused": 1}
    await outbox.close()
