"""Writers that never die and files that are not what they should be: the audit and history.

Real files in a temporary folder; each test fails on the code before these were fixed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.audit import AuditLog, read_audit, scan_audit
from custom_components.companion_agent.engine.messages import AssistantMessage
from custom_components.companion_agent.engine.turn.exchanges import ExchangeStore, LegacyFolders
from custom_components.companion_agent.engine.turn.history import file_name
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.engine.tools.conftest import record
from tests.support.exchanges import open_exchanges


async def test_a_file_that_cannot_be_written_never_blocks_the_close(tmp_path: Path) -> None:
    """The writer keeps failing records for a retry; closing waits only its grace."""
    blocked = tmp_path / "is_a_directory"
    blocked.mkdir()
    log = AuditLog(blocked, batch_delay=0)
    log.record(record(1))
    async with asyncio.timeout(3):
        await log.close(grace=0.2)
    assert log.failed == 1
    log.record(record(2))
    assert log.dropped == 1


async def test_a_failed_write_is_retried_and_no_record_is_lost(tmp_path: Path) -> None:
    """The folder is a file at first: the batch waits, then lands once the folder can exist."""
    folder = tmp_path / "audit"
    folder.write_text("not a folder")
    log = AuditLog(folder / "audit.jsonl", batch_delay=0)
    log.record(record(1))
    await asyncio.sleep(0.1)
    log.record(record(2))
    folder.unlink()
    assert await log.flush(grace=5)
    assert [r["trace_id"] for r in read_audit(log.path)] == ["trace-1", "trace-2"]
    await log.close()


async def test_a_lone_surrogate_does_not_stop_the_audit(tmp_path: Path) -> None:
    """A model's broken character is replaced; the writer lives on and later records land."""
    log = AuditLog(tmp_path / "audit.jsonl", batch_delay=0)
    log.record(record(1, arguments='{"entity_id": "light.\ud800kitchen"}'))
    log.record(record(2, detail="tail \udfff"))
    log.record(record(3))
    await log.close(grace=5)
    assert [r["trace_id"] for r in read_audit(log.path)] == ["trace-1", "trace-2", "trace-3"]
    assert log.failed == 0


async def test_a_cut_last_line_is_skipped_and_the_next_record_stands_alone(
    tmp_path: Path,
) -> None:
    """A crash mid-line left half a record: the reader counts it, the next record is whole."""
    path = tmp_path / "audit.jsonl"
    path.write_text(record(1).to_line() + '{"v": 1, "trace_id": "trace-2", "ca', encoding="utf-8")
    log = AuditLog(path, batch_delay=0)
    log.record(record(3))
    await log.close()
    scan = scan_audit(path)
    assert [r["trace_id"] for r in scan.records] == ["trace-1", "trace-3"]
    assert scan.broken == 1


async def test_the_audit_rotates_by_size_without_dropping_a_record(tmp_path: Path) -> None:
    """Past its size the file moves to .1, .2 …; every record is in one of them."""
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, batch_delay=0, max_bytes=2000, keep=20)
    for n in range(40):
        log.record(record(n))
        await asyncio.sleep(0)
    await log.close()
    files = sorted(tmp_path.iterdir())  # noqa: ASYNC240
    assert len(files) > 2
    assert all(f.stat().st_size <= 2000 for f in files)
    found = sorted(int(str(r["trace_id"]).split("-")[1]) for f in files for r in read_audit(f))
    assert found == list(range(40))


def legacy_file(root: Path, conversation_id: str = "conv-1") -> Path:
    """Return where an old version kept a conversation of persona ``p1`` (folder made)."""
    folder = root / "conversations" / "p1"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{file_name(conversation_id)}.json"


def store_in(root: Path, reports: list[tuple[Path, Path]]) -> ExchangeStore:
    """Return the exchange store of ``root``, reading its old folders, reporting bad files."""
    return open_exchanges(
        root / "exchanges.db",
        legacy=LegacyFolders(conversations=root / "conversations", windows=root / "recent"),
        on_corrupt=lambda bad, moved: reports.append((bad, moved)),
    )


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda p: p.write_bytes(b"\xff\xfe not utf-8 \x80"), id="not-utf8"),
        pytest.param(lambda p: p.mkdir(), id="a-directory"),
        pytest.param(lambda p: p.write_text('{"version": 2, "turns": [7]}'), id="wrong-shape"),
    ],
)
async def test_an_old_history_file_that_is_not_a_history_is_set_aside(
    tmp_path: Path, make: object
) -> None:
    """Upgrading: the conversation goes on empty, the bad file is kept aside, the host told."""
    path = legacy_file(tmp_path)
    make(path)  # type: ignore[operator]
    reports: list[tuple[Path, Path]] = []
    history = store_in(tmp_path, reports).conversation("p1", "conv-1")
    assert await history.load() == []
    [(bad, moved)] = reports
    assert bad == path
    assert moved != path
    assert moved.exists()
    await history.append(StoredTurn(user="hello", messages=(AssistantMessage(content="hi"),)))
    assert [
        turn.user for turn in await store_in(tmp_path, []).conversation("p1", "conv-1").turns()
    ] == ["hello"]


async def test_an_old_history_that_cannot_be_read_is_set_aside(tmp_path: Path) -> None:
    """A link that loops on itself cannot be read: reported, and the conversation goes on."""
    path = legacy_file(tmp_path)
    path.symlink_to(path)
    reports: list[tuple[Path, Path]] = []
    assert await store_in(tmp_path, reports).conversation("p1", "conv-1").load() == []
    assert [bad for bad, _ in reports] == [path]


async def test_an_exchange_file_that_is_not_sqlite_is_set_aside(tmp_path: Path) -> None:
    """A damaged exchange store is moved aside and reported; a fresh one takes the turn."""
    (tmp_path / "exchanges.db").write_bytes(b"\x00not SQLite at all\x00" * 100)
    reports: list[tuple[Path, Path]] = []
    history = store_in(tmp_path, reports).conversation("p1", "conv-1")
    await history.append(StoredTurn(user="hello", messages=(AssistantMessage(content="hi"),)))
    [(bad, moved)] = reports
    assert bad == tmp_path / "exchanges.db"
    assert moved.read_bytes().startswith(b"\x00not SQLite")
    assert [turn.user for turn in await history.turns()] == ["hello"]


async def test_a_lone_surrogate_does_not_stop_the_history_writer(tmp_path: Path) -> None:
    """A broken character is replaced; the turn is stored, no temporary file is left."""
    history = store_in(tmp_path, []).conversation("p1", "conv-1")
    answer = AssistantMessage(content="bad \ud800 char")
    await history.append(StoredTurn(user="x\udfff", messages=(answer,)))
    (stored,) = await history.turns()
    assert stored.user == "x\ufffd"
    assert stored.messages == (AssistantMessage(content="bad \ufffd char"),)
    names = sorted(p.name for p in tmp_path.iterdir())  # noqa: ASYNC240
    assert [name for name in names if not name.startswith("exchanges.db")] == []
