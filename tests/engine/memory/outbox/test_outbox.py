"""The durable outbox: survives restarts and outages, sets poison aside, stays bounded."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from custom_components.companion_agent.engine.errors import MemoryUnavailableError
from custom_components.companion_agent.engine.memory.outbox.outbox import (
    OUTBOX_RETRY,
    FollowUps,
    MemoryOutbox,
    OutboxEntry,
)


def quick(
    path: Path,
    on_corrupt: Callable[[Path, Path], None] | None = None,
    *,
    max_attempts: int = 5,
    max_aside: int = 500,
    max_entries: int = 5000,
) -> MemoryOutbox:
    """Return an outbox that retries within milliseconds."""
    retry = replace(OUTBOX_RETRY, attempts=max_attempts, first_delay=0.01, max_delay=0.04)
    return MemoryOutbox(
        path, retry=retry, max_aside=max_aside, max_entries=max_entries, on_corrupt=on_corrupt
    )


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
    assert (await second.counts())["waiting"] == 0
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
    assert (await outbox.counts())["waiting"] == 1
    assert (await outbox.entries())[0].attempts == 0

    backend.up = True
    outbox.kick()
    assert await outbox.drained(5)
    assert backend.taken == ["kept"]
    assert (await outbox.counts())["set_aside"] == 0
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
    figures = {"waiting": 0, "set_aside": 1, "refused": 0, "lost": 0, "forgotten": 0}
    assert await outbox.counts() == figures
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


async def test_past_its_bound_the_outbox_refuses_new_entries_and_counts_them(
    tmp_path: Path,
) -> None:
    """Past its bound the outbox refuses new entries and counts them."""
    outbox = quick(tmp_path / "outbox.db", max_entries=2)
    assert await outbox.put("note", {"text": "1"})
    assert await outbox.put("note", {"text": "2"})
    assert not await outbox.put("note", {"text": "3"})
    figures = {"waiting": 2, "set_aside": 0, "refused": 1, "lost": 0, "forgotten": 0}
    assert await outbox.counts() == figures
    await outbox.close()


async def test_set_aside_entries_keep_only_the_newest(tmp_path: Path) -> None:
    """Poison entries set aside are bounded too: the oldest beyond the bound go."""
    backend = Backend()
    backend.bad = {f"poison {n}" for n in range(5)}
    outbox = quick(tmp_path / "outbox.db", max_attempts=1, max_aside=2)
    outbox.start(backend.process, backend.probe)
    for n in range(5):
        await outbox.put("note", {"text": f"poison {n}"})
    await outbox.put("note", {"text": "fine"})
    assert await outbox.drained(5)
    assert backend.taken == ["fine"]
    assert (await outbox.counts())["set_aside"] == 2
    await outbox.close()
    with sqlite3.connect(tmp_path / "outbox.db") as db:
        kept = [row[0] for row in db.execute("SELECT payload FROM aside ORDER BY id")]
    assert kept == ['{"text": "poison 3"}', '{"text": "poison 4"}']


async def test_a_corrupt_file_is_moved_aside_reported_and_replaced(tmp_path: Path) -> None:
    """A file that is not an outbox goes to ``.corrupt-<time>``; the queue starts fresh."""
    path = tmp_path / "outbox.db"
    path.write_bytes(b"this is not SQLite at all, just noise " * 200)
    reported: list[tuple[Path, Path]] = []
    backend = Backend()
    outbox = quick(path, on_corrupt=lambda bad, moved: reported.append((bad, moved)))
    outbox.start(backend.process, backend.probe)
    assert await outbox.put("note", {"text": "kept"})
    assert await outbox.drained(5)
    assert backend.taken == ["kept"]
    assert len(reported) == 1
    bad, moved = reported[0]
    assert bad == path
    assert moved.name.startswith("outbox.db.corrupt-")
    assert moved.read_bytes().startswith(b"this is not SQLite")
    await outbox.close()


async def test_another_programs_database_is_not_taken_for_an_outbox(tmp_path: Path) -> None:
    """A sound SQLite file with other tables is moved aside too, not written into."""
    path = tmp_path / "outbox.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE people (name TEXT)")
    reported: list[Path] = []
    outbox = quick(path, on_corrupt=lambda _bad, moved: reported.append(moved))
    assert await outbox.put("note", {"text": "x"})
    assert len(reported) == 1
    with sqlite3.connect(reported[0]) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("people",)]
    await outbox.close()


async def test_an_unwritable_outbox_costs_the_write_not_the_caller(tmp_path: Path) -> None:
    """When the file cannot be created at all a put says False, counted as lost; no raise."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the outbox's folder should be")
    outbox = quick(blocker / "outbox.db")
    assert not await outbox.put("note", {"text": "x"})
    assert outbox.lost == 1
    await outbox.close()


async def test_one_kind_away_does_not_hold_up_the_others(tmp_path: Path) -> None:
    """While the graph is down its entries wait in order; the store's go through meanwhile."""
    backend = Backend()
    down = {"graph"}
    both_taken = asyncio.Event()

    async def process(entry: OutboxEntry) -> FollowUps:
        """Fail the kinds that are down; take the rest."""
        if entry.kind in down:
            if backend.taken == ["a", "b"]:
                both_taken.set()  # a later pass: both were taken and settled
            raise MemoryUnavailableError(f"{entry.kind} down")
        return await backend.process(entry)

    outbox = quick(tmp_path / "outbox.db")
    for n in range(60):  # more than one batch of the kind that is away, ahead of the rest
        await outbox.put("graph", {"text": f"g{n}"})
    for text in ("a", "b"):
        await outbox.put("note", {"text": text})
    outbox.start(process, backend.probe)
    async with asyncio.timeout(5):
        await both_taken.wait()
    assert (await outbox.counts())["waiting"] == 60
    down.clear()
    outbox.kick()
    assert await outbox.drained(5)
    assert backend.taken == ["a", "b", *(f"g{n}" for n in range(60))]
    await outbox.close()
