"""One SQLite worker model (one thread, one connection per file) for every file of the engine."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
from pathlib import Path

from custom_components.companion_agent.engine.memory.outbox.outbox import MemoryOutbox, OutboxFile
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from tests.support.exchanges import open_exchanges

ROOT = Path(__file__).resolve().parents[2]

_PUT_THEN_DIE = """
import asyncio, os, sys
from pathlib import Path
from tests.support import engine_only
if not engine_only.homeassistant_installed():  # the engine without HA (.py314)
    engine_only.register_bare_package()
from custom_components.companion_agent.engine.memory.outbox.outbox import MemoryOutbox

async def main() -> None:
    outbox = MemoryOutbox(Path(sys.argv[1]))
    assert await outbox.put("note", {"text": "said just before the power went"})
    os._exit(0)  # no close, no flush, no interpreter shutdown: only what is on disk counts

asyncio.run(main())
"""


async def test_an_entry_is_on_disk_when_put_returns(tmp_path: Path) -> None:
    """A process that dies right after ``put`` returned leaves the entry in the file."""
    path = tmp_path / "outbox.db"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _PUT_THEN_DIE, str(path), cwd=ROOT
    )
    assert await asyncio.wait_for(process.wait(), 60) == 0
    reader = MemoryOutbox(path)
    try:
        [entry] = await reader.entries()
        assert entry.payload == {"text": "said just before the power went"}
    finally:
        await reader.close()


async def test_the_outbox_the_store_and_the_exchanges_run_on_one_thread_each(
    tmp_path: Path,
) -> None:
    """Each file has its own worker thread; the outbox and the exchanges are synchronous=FULL."""
    outbox = OutboxFile(tmp_path / "outbox.db")
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    exchanges = open_exchanges(tmp_path / "exchanges.db")
    try:

        def seen(db: sqlite3.Connection) -> tuple[str, int]:
            """Return the thread this runs on and the connection's synchronous level."""
            (level,) = db.execute("PRAGMA synchronous").fetchone()
            thread = threading.current_thread()
            return f"{thread.name} {thread.ident}", int(level)

        outbox_runs = {await outbox._file().run(seen) for _ in range(5)}
        store_runs = {await store._worker.run(seen) for _ in range(5)}
        exchange_runs = {await exchanges._file._worker.run(seen) for _ in range(5)}
        [(outbox_thread, outbox_level)] = outbox_runs
        [(store_thread, store_level)] = store_runs
        [(exchange_thread, exchange_level)] = exchange_runs
        assert len({outbox_thread, store_thread, exchange_thread}) == 3
        assert outbox_thread.startswith("companion outbox.db")
        assert store_thread.startswith("companion memory.db")
        assert exchange_thread.startswith("companion exchanges.db")
        # FULL for the queue and the exchanges (a turn is on disk when stored), NORMAL for the store
        assert (outbox_level, store_level, exchange_level) == (2, 1, 2)
    finally:
        await outbox.close()
        await store.close()
        await exchanges.close()


async def test_after_a_reset_the_file_is_checked_again(tmp_path: Path) -> None:
    """A file damaged while the connection was closed is moved aside and reported, once."""
    path = tmp_path / "outbox.db"
    reported: list[Path] = []
    outbox = OutboxFile(path, on_corrupt=lambda _bad, moved: reported.append(moved))
    try:
        assert await outbox.put([("note", {"text": "before"})])
        await outbox.reset()
        path.write_bytes(b"no longer SQLite" * 512)
        assert await outbox.put([("note", {"text": "after"})])
        assert [entry.payload for entry in await outbox.peek(10)] == [{"text": "after"}]
        assert await outbox.counts() == (1, 0)
    finally:
        await outbox.close()
    [moved] = reported
    assert moved.read_bytes().startswith(b"no longer SQLite")


async def test_a_put_after_close_lands_and_leaves_no_thread(tmp_path: Path) -> None:
    """Closing ends the thread; a later put (a turn ending during unload) still lands."""

    def outbox_threads() -> list[str]:
        """Return the names of the live threads of this outbox file."""
        return [t.name for t in threading.enumerate() if "outbox.db" in t.name]

    outbox = MemoryOutbox(tmp_path / "outbox.db")
    assert await outbox.put("note", {"text": "one"})
    assert outbox_threads()
    await outbox.close()
    assert outbox_threads() == []
    assert await outbox.put("note", {"text": "two"})
    assert [entry.payload["text"] for entry in await outbox.entries()] == ["one", "two"]
    assert outbox_threads() == []
