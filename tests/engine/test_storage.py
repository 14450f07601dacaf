"""Durable conversation history on real files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from custom_components.companion_agent.engine.messages import (
    AssistantMessage,
    ToolCallRequest,
    ToolMessage,
    UserMessage,
)
from custom_components.companion_agent.engine.turn.history import (
    ConversationStore,
    JsonConversationHistory,
    file_name,
)
from custom_components.companion_agent.engine.turn.stored import StoredTurn, stored_result


def exchange(user: str, answer: str) -> StoredTurn:
    """Return a plain question and answer."""
    return StoredTurn(user=user, messages=(AssistantMessage(content=answer),), time=1.0)


async def test_turns_survive_a_new_instance(tmp_path: Path) -> None:
    """What one instance wrote, the next one reads back in order, tool calls included."""
    call = ToolCallRequest(call_id="c1", name="get_time", arguments="{}")
    first = ConversationStore(tmp_path).get("conv/1")
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
    await first.append(exchange("Thanks", "You're welcome."))
    await first.flush()
    again = ConversationStore(tmp_path).get("conv/1")
    assert await again.load() == [
        UserMessage(content="What time is it?"),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(call_id="c1", content='{"time":"12:00"}'),
        AssistantMessage(content="Noon."),
        UserMessage(content="Thanks"),
        AssistantMessage(content="You're welcome."),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{file_name('conv/1')}.json"]  # noqa: ASYNC240


async def test_only_the_last_turns_are_kept(tmp_path: Path) -> None:
    """The file keeps at most max_turns exchanges."""
    history = JsonConversationHistory(tmp_path / "c.json", max_turns=2)
    for n in range(5):
        await history.append(exchange(f"q{n}", f"a{n}"))
    await history.flush()
    data = json.loads((tmp_path / "c.json").read_text())
    assert [t["user"] for t in data["turns"]] == ["q3", "q4"]


async def test_unfinished_turns_come_back_marked(tmp_path: Path) -> None:
    """An interrupted answer, and one cut while its tools ran, are marked for the model."""
    history = JsonConversationHistory(tmp_path / "c.json")
    call = ToolCallRequest(call_id="c1", name="get_time", arguments="{}")
    await history.append(
        StoredTurn(
            user="Tell me a story",
            messages=(AssistantMessage(content="Once upon"),),
            outcome="interrupted",
        )
    )
    await history.append(
        StoredTurn(
            user="Time?",
            messages=(AssistantMessage(tool_calls=(call,)), ToolMessage(call_id="c1", content="x")),
            outcome="timed_out",
        )
    )
    messages = await history.load()
    assert messages[1] == AssistantMessage(
        content="Once upon\n[the person interrupted you here and did not hear the rest]"
    )
    assert messages[-1] == AssistantMessage(content="[this answer ran out of time here]")


async def test_a_turn_is_amended_by_its_trace_id_and_the_file_follows(tmp_path: Path) -> None:
    """Amend: the turn found by its trace id is interrupted, cut to what was heard, on disk."""
    path = tmp_path / "c.json"
    history = JsonConversationHistory(path)
    call = ToolCallRequest(call_id="c1", name="get_time", arguments="{}")
    await history.append(replace(exchange("q0", "Earlier."), trace_id="t0"))
    told = (
        AssistantMessage(content="Let me look. ", tool_calls=(call,)),
        ToolMessage(call_id="c1", content='{"time":"12:00"}'),
        AssistantMessage(content="It is noon. Lunch is at one."),
    )
    await history.append(StoredTurn(user="Time?", messages=told, trace_id="t1"))

    assert not await history.amend("elsewhere", "Let me")
    assert not await history.amend("", "Let me")
    assert await history.amend("t1", "Let me look. It is noon. ")
    await history.flush()

    again = JsonConversationHistory(path)
    turns = await again.turns()
    assert [(t.trace_id, t.outcome) for t in turns] == [("t0", "complete"), ("t1", "interrupted")]
    assert turns[1].messages == (*told[:2], AssistantMessage(content="It is noon. "))
    messages = await again.load()
    assert messages[-1] == AssistantMessage(
        content="It is noon. \n[the person interrupted you here and did not hear the rest]"
    )


async def test_a_turn_amended_to_nothing_heard_keeps_its_tool_calls(tmp_path: Path) -> None:
    """Nothing heard: the answer's text goes, its tool calls and results stay."""
    history = JsonConversationHistory(tmp_path / "c.json")
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


async def test_corrupt_file_is_moved_aside_and_reported(tmp_path: Path) -> None:
    """A corrupt file does not stop the conversation: it starts empty and is kept aside."""
    path = tmp_path / "c.json"
    path.write_text('{"version": 2, "turns": [{"user": 3')
    reports: list[tuple[Path, Path]] = []
    history = JsonConversationHistory(
        path, on_corrupt=lambda bad, moved: reports.append((bad, moved))
    )
    assert await history.load() == []
    assert len(reports) == 1
    assert reports[0][0] == path
    assert reports[0][1].read_text() == '{"version": 2, "turns": [{"user": 3'
    await history.append(exchange("hello", "hi"))
    await history.flush()
    assert json.loads(path.read_text())["turns"][0]["user"] == "hello"
