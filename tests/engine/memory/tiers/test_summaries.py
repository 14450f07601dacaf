"""Tier 2: what leaves the window, and idle windows, become summaries off the hot path."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.memory.answers import JsonAnswers
from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from custom_components.companion_agent.engine.memory.hook import MemoryHook
from custom_components.companion_agent.engine.memory.models import MemoryScope, NewMemory
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from custom_components.companion_agent.engine.memory.tiers.summaries import SessionSummaries
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.engine.memory import every_record
from tests.engine.memory.conftest import make_memory
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.turns import Conversations, persona, run

SUMMARY = json.dumps({"summary": "Alice asked about a few topics."})
ALICE = MemoryScope(agent_id="p1", owner="user:alice", environment="test")


async def turns(
    memory: CompanionMemory, tmp_path: Path, model: OpenAIChatModel, count: int
) -> None:
    """Run ``count`` long turns of alice's, each in a conversation of its own."""
    talk = Conversations(tmp_path, memory.exchanges)
    for index in range(count):
        request = talk.request(
            f"Tell me about topic {index}.",
            conversation_id=f"c{index}",
            hooks=(MemoryHook(memory, ALICE, None),),
            owner=ALICE.owner,
        )
        done = await run(
            TurnRunner(), persona(model), replace(request, window=memory.window(ALICE))
        )
        assert done.result.outcome == "complete"


async def test_overflow_becomes_a_summary(
    memory: CompanionMemory,
    store: EmbeddedStore,
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
    tmp_path: Path,
) -> None:
    """Turns cut from the window are summarised once by the memory model, as a record."""
    for index in range(8):
        padding = "".join(f"w{n:04d} " for n in range(80))  # no loop: each word differs
        llm_server.script(Reply.text(f"Topic {index}: " + padding))
    # One answer for every structured request: a summary (extraction finds it off its schema).
    llm_server.script_structured(*[Reply.text(SUMMARY)] * 40)
    await turns(memory, tmp_path, chat_model, 8)
    assert await memory.wait_idle(5)
    summaries = [r for r in await every_record(store, [ALICE]) if r.kind == "summary"]
    asked = [
        str(body["messages"])
        for body in llm_server.structured_requests
        if "session_summary" in json.dumps(body["response_format"])
    ]
    assert asked
    assert "Tell me about topic 0." in asked[0]
    for index in range(8):  # no turn is summarised twice
        assert sum(f"Tell me about topic {index}." in a for a in asked) <= 1
    assert "Tell me about topic 7." not in "".join(asked)  # the newest stays in the window
    assert len(summaries) == len(asked) == memory.summaries.made


async def test_idle_window_is_summarised_and_a_bad_answer_costs_only_it(
    tmp_path: Path, store: EmbeddedStore, llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """An idle window gets a summary; an unusable answer gives none and the turns stand."""
    memory = await make_memory(tmp_path, store, chat_model, store.graph)
    memory.summaries._idle_after = 0.05
    llm_server.script_structured(*[Reply.text(SUMMARY)] * 3)
    await turns(memory, tmp_path, chat_model, 2)
    for _ in range(100):
        if memory.summaries.made:
            break
        await asyncio.sleep(0.02)
    assert await memory.wait_idle(5)
    [summary] = [r for r in await every_record(store, [ALICE]) if r.kind == "summary"]
    assert summary.text == "Alice asked about a few topics."

    llm_server.script_structured(*[Reply.text("not json at all")] * 3)
    await turns(memory, tmp_path, chat_model, 2)
    for _ in range(100):
        if memory.summaries.failed:
            break
        await asyncio.sleep(0.02)
    assert memory.summaries.failed == 1
    assert len([r for r in await every_record(store, [ALICE]) if r.kind == "summary"]) == 1
    await memory.close(grace=1.0)


@pytest.mark.timeout(30)  # the old code held the loop for ever: fail, never hang
async def test_wait_idle_returns_when_it_runs_before_a_finished_summary_is_unlisted(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A summary that has just finished still counts as listed; ``wait_idle`` must not spin.

    The sink schedules ``wait_idle`` to run eagerly in the same loop pass in which the
    summary's task finishes, before the task's own done callbacks: with finished tasks
    awaited, ``wait_idle`` never yielded again and held the event loop for ever.
    """
    loop = asyncio.get_running_loop()
    waited: list[asyncio.Task[None]] = []

    async def sink(memory: NewMemory) -> None:
        """Take the summary, then have ``wait_idle`` start in the same pass as the task ends."""
        loop.call_soon(
            lambda: waited.append(asyncio.eager_task_factory(loop, summaries.wait_idle()))
        )

    summaries = SessionSummaries(sink)
    llm_server.script_structured(Reply.text(SUMMARY))
    stored = [StoredTurn(user=f"Tell me about topic {i}.", time=float(i + 1)) for i in range(2)]
    summaries.overflowed(ALICE, stored, JsonAnswers(chat_model, timeout=5))
    for _ in range(200):
        if waited:
            break
        await asyncio.sleep(0.01)
    assert summaries.made == 1
    async with asyncio.timeout(2):
        await waited[0]
