"""Tier 1: the rolling window crosses conversation ids and is cut to its token budget."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from custom_components.companion_agent.engine.memory.models import MemoryScope
from custom_components.companion_agent.engine.memory.tiers.window import (
    TRIMMED_RESULT,
    RecentWindow,
    trim_window,
    turn_tokens,
)
from custom_components.companion_agent.engine.messages import (
    AssistantMessage,
    ToolCallRequest,
    ToolMessage,
)
from custom_components.companion_agent.engine.turn.exchanges import MAX_WINDOW_TURNS
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.support.exchanges import open_exchanges
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.turns import Ask, Conversations, persona, run

SCOPE = MemoryScope(agent_id="p1", owner="user:alice", environment="test")


def tool_turn(user: str, result: str, answer: str, at: float) -> StoredTurn:
    """Return a stored turn with one tool call, its result and an answer."""
    call = ToolCallRequest(call_id=f"c{at}", name="lookup", arguments="{}")
    return StoredTurn(
        user=user,
        messages=(
            AssistantMessage(tool_calls=(call,)),
            ToolMessage(call_id=call.call_id, content=result),
            AssistantMessage(content=answer),
        ),
        time=at,
    )


def test_trim_order_tool_output_then_answers_then_words() -> None:
    """Old tool output goes first, then old answers; the person's words go last."""
    turns = [tool_turn(f"question {i}", "x" * 400, "an answer " * 20, float(i)) for i in range(4)]
    whole = sum(turn_tokens(t) for t in turns)

    slim = trim_window(turns, whole - 150)
    assert [t.user for t in slim] == [t.user for t in turns]
    assert isinstance(slim[0].messages[1], ToolMessage)
    assert slim[0].messages[1].content == TRIMMED_RESULT
    assert slim[-1].messages == turns[-1].messages  # the newest turn is whole

    no_tools = [replace(t, messages=(AssistantMessage(content="an answer " * 20),)) for t in turns]
    words_only = trim_window(no_tools, sum(turn_tokens(t) for t in no_tools) - 40)
    assert words_only[0].messages == ()
    assert words_only[0].user == "question 0"
    assert words_only[-1].messages == no_tools[-1].messages

    tiny = trim_window(turns, turn_tokens(turns[-1]))
    assert [t.user for t in tiny] == ["question 3"]
    assert trim_window(turns, 0) == []


async def test_window_crosses_conversations_and_owners(
    tmp_path: Path, llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A new conversation id sees the person's earlier exchanges; another person does not."""
    runner = TurnRunner()
    talk = Conversations(tmp_path)
    me = persona(chat_model)

    def request(text: str, conversation_id: str, owner: str) -> Ask:
        scope = replace(SCOPE, owner=owner)
        return replace(
            talk.request(text, conversation_id=conversation_id, owner=owner),
            window=RecentWindow(talk.store, scope, budget=2000),
        )

    await run(runner, me, request("My cat is called Miso.", "conv-1", "user:alice"))
    await run(runner, me, request("What is my cat called?", "conv-2", "user:alice"))
    await run(runner, me, request("Hello there.", "conv-3", "user:bob"))

    second, third = llm_server.requests[1], llm_server.requests[2]
    assert "My cat is called Miso." in str(second["messages"])
    assert "Miso" not in str(third["messages"])
    assert len(await talk.history("conv-2").turns()) == 1  # the conversation's own view


async def test_window_budget_cuts_across_conversations(
    tmp_path: Path, llm_server: LLMServer, chat_model: OpenAIChatModel, memory: CompanionMemory
) -> None:
    """Exchanges of earlier conversations are cut oldest first to the window's budget."""
    runner = TurnRunner()
    talk = Conversations(tmp_path, memory.exchanges)
    me = persona(chat_model)
    for index in range(8):
        padding = "".join(f"w{n:04d} " for n in range(60))  # no loop: each word differs
        llm_server.script(Reply.text(f"Answer {index}: " + padding))
        request = talk.request(
            f"Question {index}.", conversation_id=f"conv-{index}", owner=SCOPE.owner
        )
        await run(runner, me, replace(request, window=memory.window(SCOPE)))

    last = str(llm_server.requests[-1]["messages"])
    assert "Question 6." in last
    assert "Answer 6:" in last
    assert "Answer 0:" not in last  # the oldest answer did not fit...
    assert "Question 0." in last  # ...but the person's words are cut last
    assert len(await memory.window(SCOPE).turns()) == 8  # the store keeps them all


async def test_the_turn_that_falls_out_of_the_window_goes_to_the_summaries(
    tmp_path: Path,
) -> None:
    """Past MAX_WINDOW_TURNS the oldest turn leaves the window and is handed on, once read."""
    exchanges = open_exchanges(tmp_path / "exchanges.db")
    view = exchanges.conversation("p1", "c", owner=SCOPE.owner, windowed=True)
    fell: list[str] = []
    window = RecentWindow(
        exchanges, SCOPE, budget=100_000, on_overflow=lambda _s, t: fell.extend(x.user for x in t)
    )
    for index in range(MAX_WINDOW_TURNS + 1):
        await view.append(StoredTurn(user=f"q{index}", time=float(index)))
    sent = await window.load()
    assert fell == ["q0"]
    assert len(sent) == MAX_WINDOW_TURNS
    assert (await window.turns())[0].user == "q1"


async def test_idle_windows_are_pruned(memory: CompanionMemory, tmp_path: Path) -> None:
    """A window nobody has spoken in for the retention is deleted like a conversation."""
    view = memory.exchanges.conversation("p1", "c", owner=SCOPE.owner, windowed=True)
    await view.append(StoredTurn(user="Hello", time=time.time() - 7200))
    assert await memory.exchanges.prune(retention=3600 * 3) == 0
    assert await memory.exchanges.prune(retention=3600) == 1
    assert await memory.window(SCOPE).turns() == []
