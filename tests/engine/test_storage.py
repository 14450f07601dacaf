"""Durable conversation history: one exchange store on a real SQLite file, two views of it."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.messages import (
    AssistantMessage,
    ToolCallRequest,
    ToolMessage,
    UserMessage,
)
from custom_components.companion_agent.engine.turn import exchange_file
from custom_components.companion_agent.engine.turn.exchanges import (
    MAX_WINDOW_TURNS,
    ExchangeStore,
    LegacyFolders,
)
from custom_components.companion_agent.engine.turn.history import file_name
from custom_components.companion_agent.engine.turn.stored import (
    FORMAT_VERSION,
    StoredTurn,
    dump_turn,
    stored_result,
)
from tests.support.exchanges import open_exchanges


def exchange(user: str, answer: str, at: float = 1.0, trace_id: str = "") -> StoredTurn:
    """Return a plain question and answer."""
    return StoredTurn(
        user=user, messages=(AssistantMessage(content=answer),), time=at, trace_id=trace_id
    )


def store(root: Path, *, max_turns: int = 20) -> ExchangeStore:
    """Return the exchange store in ``root``, reading the old folders there."""
    return open_exchanges(
        root / "exchanges.db",
        legacy=LegacyFolders(conversations=root / "conversations", windows=root / "recent"),
        max_turns=max_turns,
    )


def write_legacy(root: Path, folder: str, key: str, turns: list[StoredTurn]) -> Path:
    """Write an old version's history file of persona ``p1`` (a conversation or a window)."""
    path = root / folder / "p1" / f"{file_name(key)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"version": FORMAT_VERSION, "turns": [dump_turn(turn) for turn in turns]}
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


async def test_turns_survive_a_new_instance(tmp_path: Path) -> None:
    """What one instance wrote, the next one reads back in order, tool calls included."""
    call = ToolCallRequest(call_id="c1", name="get_time", arguments="{}")
    first = store(tmp_path).conversation("p1", "conv/1")
    await first.append(
        StoredTurn(
            user="What time is it?",
            messages=(
                AssistantMessage(tool_calls=(call,)),
                ToolMessage(call_id="c1", content='{"time":"12:00"}'),
                AssistantMessage(content="Noon."),
            ),
            time=1.0,
        )
    )
    await first.append(exchange("Thanks", "You're welcome.", 2.0))
    again = store(tmp_path).conversation("p1", "conv/1")
    assert await again.load() == [
        UserMessage(content="What time is it?"),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(call_id="c1", content='{"time":"12:00"}'),
        AssistantMessage(content="Noon."),
        UserMessage(content="Thanks"),
        AssistantMessage(content="You're welcome."),
    ]
    assert await store(tmp_path).conversation("p2", "conv/1").load() == []  # another persona


async def test_only_the_last_turns_are_kept(tmp_path: Path) -> None:
    """A conversation keeps at most max_turns exchanges; the rows beyond are deleted."""
    history = store(tmp_path, max_turns=2).conversation("p1", "c")
    for n in range(5):
        await history.append(exchange(f"q{n}", f"a{n}", float(n)))
    assert [t.user for t in await history.turns()] == ["q3", "q4"]
    with closing(sqlite3.connect(tmp_path / "exchanges.db")) as db:
        assert db.execute("SELECT count(*) FROM exchanges").fetchone() == (2,)


async def test_the_window_view_crosses_conversations_and_keeps_its_bound(tmp_path: Path) -> None:
    """One row per turn: its conversation and its owner's window both read it, bounded."""
    exchanges = store(tmp_path, max_turns=3)
    for n in range(MAX_WINDOW_TURNS + 5):
        view = exchanges.conversation("p1", f"conv-{n // 10}", owner="user:alice", windowed=True)
        await view.append(exchange(f"q{n}", f"a{n}", float(n)))
    await exchanges.conversation("p1", "elsewhere", owner="user:bob", windowed=True).append(
        exchange("bob", "hi", 99.0)
    )
    window = await exchanges.window("p1", "user:alice")
    assert [t.user for t in window] == [f"q{n}" for n in range(5, MAX_WINDOW_TURNS + 5)]
    longer = await exchanges.window("p1", "user:alice", MAX_WINDOW_TURNS + 1)
    assert longer[0].user == "q4"  # the one that just fell out, for the summaries
    assert [t.user for t in await exchanges.conversation("p1", "conv-4").turns()] == [
        "q42",
        "q43",
        "q44",
    ]
    assert [t.user for t in await exchanges.window("p1", "user:bob")] == ["bob"]
    with closing(sqlite3.connect(tmp_path / "exchanges.db")) as db:
        (rows,) = db.execute("SELECT count(*) FROM exchanges").fetchone()
    assert rows == MAX_WINDOW_TURNS + 1 + 1  # the window (and the one fallen out), and bob's


async def test_unfinished_turns_come_back_marked(tmp_path: Path) -> None:
    """An interrupted answer, and one cut while its tools ran, are marked for the model."""
    history = store(tmp_path).conversation("p1", "c")
    call = ToolCallRequest(call_id="c1", name="get_time", arguments="{}")
    await history.append(
        StoredTurn(
            user="Tell me a story",
            messages=(AssistantMessage(content="Once upon"),),
            outcome="interrupted",
            time=1.0,
        )
    )
    await history.append(
        StoredTurn(
            user="Time?",
            messages=(AssistantMessage(tool_calls=(call,)), ToolMessage(call_id="c1", content="x")),
            outcome="timed_out",
            time=2.0,
        )
    )
    messages = await history.load()
    assert messages[1] == AssistantMessage(
        content="Once upon\n[the person interrupted you here and did not hear the rest]"
    )
    assert messages[-1] == AssistantMessage(content="[this answer ran out of time here]")


async def test_a_turn_is_amended_by_its_trace_id_and_both_views_follow(tmp_path: Path) -> None:
    """Amend: the turn found by its trace id is interrupted, cut to what was heard, on disk."""
    exchanges = store(tmp_path)
    history = exchanges.conversation("p1", "c", owner="user:alice", windowed=True)
    call = ToolCallRequest(call_id="c1", name="get_time", arguments="{}")
    await history.append(replace(exchange("q0", "Earlier."), trace_id="t0"))
    told = (
        AssistantMessage(content="Let me look. ", tool_calls=(call,)),
        ToolMessage(call_id="c1", content='{"time":"12:00"}'),
        AssistantMessage(content="It is noon. Lunch is at one."),
    )
    await history.append(StoredTurn(user="Time?", messages=told, trace_id="t1", time=2.0))

    assert not await history.amend("elsewhere", "Let me")
    assert not await history.amend("", "Let me")
    assert await history.amend("t1", "Let me look. It is noon. ")

    again = store(tmp_path)
    turns = await again.conversation("p1", "c").turns()
    assert [(t.trace_id, t.outcome) for t in turns] == [("t0", "complete"), ("t1", "interrupted")]
    assert turns[1].messages == (*told[:2], AssistantMessage(content="It is noon. "))
    assert (await again.window("p1", "user:alice"))[1] == turns[1]  # one row, two views
    messages = await again.conversation("p1", "c").load()
    assert messages[-1] == AssistantMessage(
        content="It is noon. \n[the person interrupted you here and did not hear the rest]"
    )


async def test_a_turn_amended_to_nothing_heard_keeps_its_tool_calls(tmp_path: Path) -> None:
    """Nothing heard: the answer's text goes, its tool calls and results stay."""
    history = store(tmp_path).conversation("p1", "c")
    call = ToolCallRequest(call_id="c1", name="get_time", arguments="{}")
    told = (
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(call_id="c1", content="x"),
        AssistantMessage(content="Noon."),
    )
    await history.append(StoredTurn(user="Time?", messages=told, trace_id="t1"))
    assert await history.amend("t1", "")
    assert (await history.turns())[0].messages == told[:2]


def test_stored_results_are_trimmed_and_masked() -> None:
    """A tool result keeps its shape, loses its secrets, and is bounded."""
    masked = json.loads(stored_result('{"api_key": "sk-abcdefghijklmnop", "weather_code": 3}'))
    assert masked == {"api_key": "***", "weather_code": 3}
    assert len(stored_result("x" * 10_000)) <= 1000


async def test_old_history_files_are_read_in_once_and_deleted(tmp_path: Path) -> None:
    """Upgrading keeps every history: an old conversation and an old window become rows.

    A turn in both (the same trace id) is one row; the old files are gone after.
    """
    shared = exchange("My cat is Miso.", "Lovely.", 1.0, "t1")
    talk = write_legacy(tmp_path, "conversations", "conv-1", [shared, exchange("ok", "ok", 2.0)])
    other = exchange("Earlier, elsewhere.", "Yes.", 0.5, "t0")
    window = write_legacy(tmp_path, "recent", "user:alice", [other, shared])

    exchanges = store(tmp_path)
    assert [t.user for t in await exchanges.conversation("p1", "conv-1").turns()] == [
        "My cat is Miso.",
        "ok",
    ]
    assert [t.user for t in await exchanges.window("p1", "user:alice")] == [
        "Earlier, elsewhere.",
        "My cat is Miso.",
    ]
    assert not talk.exists()
    assert not window.exists()
    with closing(sqlite3.connect(tmp_path / "exchanges.db")) as db:
        assert db.execute("SELECT count(*) FROM exchanges").fetchone() == (3,)
    assert await exchanges.forget(owner="user:alice") == 2  # the joined row is alice's
    assert [t.user for t in await store(tmp_path).conversation("p1", "conv-1").turns()] == ["ok"]


async def test_a_forget_refuses_a_turn_that_began_before_it(tmp_path: Path) -> None:
    """A turn still being answered when its person is forgotten is never stored after."""
    exchanges = store(tmp_path)
    view = exchanges.conversation("p1", "c", owner="user:alice", windowed=True)
    began = time.time()
    await view.append(replace(exchange("Old words", "ok", began), began=began))
    forgotten_at = time.time()
    assert await exchanges.forget(owner="user:alice", at=forgotten_at) == 1
    late = replace(exchange("Said before the forget", "stored after", time.time()), began=began)
    await view.append(late)
    later = time.time() + 1
    await view.append(replace(exchange("Said after", "kept", later), began=later))
    assert [t.user for t in await view.turns()] == ["Said after"]
    assert [t.user for t in await exchanges.window("p1", "user:alice")] == ["Said after"]
    bob = exchanges.conversation("p1", "c2", owner="user:bob", windowed=True)
    await bob.append(replace(exchange("Bob", "ok", began), began=began))
    assert [t.user for t in await bob.turns()] == ["Bob"]  # another owner's turn is not refused


async def test_a_turn_forgotten_alone_goes_and_never_comes_back(tmp_path: Path) -> None:
    """A turn forgotten by its trace id (a forgotten memory's statement) leaves both views,
    is refused when stored later (after a restart too), and the persona's other turns stay."""
    exchanges = store(tmp_path)
    view = exchanges.conversation("p1", "c", owner="user:alice", windowed=True)
    await view.append(exchange("My bike lock is red.", "ok", 1.0, "t1"))
    await view.append(exchange("My bike lock code is 5150.", "ok", 2.0, "t2"))
    assert await exchanges.forget_turn("p2", "t2") == 0  # another persona's turn of that id
    assert await exchanges.forget_turn("p1", "t2") == 1
    assert await exchanges.forget_turn("p1", "t3") == 0  # still being answered
    await exchanges.close()
    again = store(tmp_path).conversation("p1", "c", owner="user:alice", windowed=True)
    await again.append(exchange("My locker code is 7788.", "stored late", 3.0, "t3"))
    await again.append(exchange("My bike is blue.", "ok", 4.0, "t4"))
    assert [t.user for t in await again.turns()] == ["My bike lock is red.", "My bike is blue."]


async def test_the_turns_forgotten_alone_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the newest ``MAX_FORGOTTEN_TURNS`` tombstones of single turns are kept."""
    assert exchange_file.MAX_FORGOTTEN_TURNS == 10_000
    monkeypatch.setattr(exchange_file, "MAX_FORGOTTEN_TURNS", 3)  # 10,000 forgets take long
    exchanges = store(tmp_path)
    for n in range(5):
        await exchanges.forget_turn("p1", f"t{n}", at=float(n))
    await exchanges.close()
    with closing(sqlite3.connect(tmp_path / "exchanges.db")) as db:
        kept = sorted(row[0] for row in db.execute("SELECT trace_id FROM forgotten_turns"))
    assert kept == ["t2", "t3", "t4"]


async def test_prune_deletes_exchanges_whose_conversation_and_window_are_idle(
    tmp_path: Path,
) -> None:
    """A turn stays while its window is spoken in; it goes once both views are idle."""
    exchanges = store(tmp_path)
    long_ago, now = time.time() - 40 * 86400, time.time()
    old = exchanges.conversation("p1", "old", owner="user:alice", windowed=True)
    await old.append(exchange("old words", "ok", long_ago))
    await exchanges.conversation("p1", "other").append(exchange("idle talk", "ok", long_ago))
    new = exchanges.conversation("p1", "new", owner="user:alice", windowed=True)
    await new.append(exchange("new words", "ok", now))
    assert await exchanges.prune(30 * 86400) == 1  # the idle conversation outside any window
    assert [t.user for t in await exchanges.window("p1", "user:alice")] == [
        "old words",  # its conversation is idle, alice's window is not
        "new words",
    ]
    assert await exchanges.prune(-1) == 2  # both views idle: gone
