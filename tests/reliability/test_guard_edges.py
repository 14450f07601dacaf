"""Guard edges: a call repeated every round, expiry on time, guests and the owner's token,
and two turns of one conversation at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.guard.confirmations import Confirmations
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.messages import ToolCallRequest
from custom_components.companion_agent.engine.tools.contract import (
    ToolContext,
    ToolOutcome,
    ToolSpec,
    ToolSuccess,
)
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer
from tests.support.turns import Conversations, persona, run


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


async def test_a_call_the_model_repeats_every_round_runs_once(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Five rounds of the same call: one service call, and the model hears it was done."""
    runs: list[str] = []

    async def heat(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Count the runs."""
        runs.append("heat")
        return "heating on"

    tool = Tool(spec=ToolSpec(name="heat", description="Heat"), handler=heat)
    calls = [Reply.tool_calls((f"call_{n}", "heat", "{}")) for n in range(5)]
    llm_server.script(*calls, Reply.text("The heating is on."))
    done = await run(TurnRunner(), persona(chat_model), talk.request("Heat", tools=[tool]))
    assert runs == ["heat"]
    assert done.result.outcome == "complete"
    last = llm_server.requests[-1]["messages"]
    assert isinstance(last, list)
    told = [str(m["content"]) for m in last if m["role"] == "tool"]
    assert told[0] == "heating on"
    assert all('"already_done":true' in text for text in told[1:])


def held(confirmations: Confirmations, user: str, conversation: str, n: int) -> str:
    """Hold one call for a user in a conversation; return its token id."""

    async def run(*_: object) -> ToolOutcome:
        """Never run in these tests."""
        return ToolSuccess(content="ran")

    request = ToolCallRequest(call_id=f"c{n}", name="unlock", arguments=f'{{"n":{n}}}')
    ctx = ToolContext(conversation_id=conversation, user_id=user)
    return confirmations.hold(request, ctx, {"tool": "unlock"}, run).token_id


async def test_expiry_is_announced_at_the_deadline_without_anyone_asking() -> None:
    """The expired event fires on time: nothing has to touch the token first."""
    heard: list[str] = []
    confirmations = Confirmations(ttl=0.2, listener=lambda _token, status: heard.append(status))
    held(confirmations, "alice", "conv-1", 1)
    await asyncio.sleep(0.4)
    assert heard == ["requested", "expired"]
    confirmations.close()


async def test_guests_cannot_push_out_the_owners_held_call() -> None:
    """64 risky requests from other people leave the owner's token waiting."""
    confirmations = Confirmations()
    owner = held(confirmations, "alice", "conv-1", 0)
    for n in range(64):
        held(confirmations, f"guest-{n}", f"guest-conv-{n}", n + 1)
    assert confirmations.peek(owner) is not None
    for n in range(20):
        held(confirmations, "guest", "guest-conv", 100 + n)
    assert confirmations.peek(owner) is not None
    assert len(confirmations.pending_for("guest-conv")) == 8
    confirmations.close()


async def test_two_turns_of_one_conversation_never_interleave(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """The second turn waits for the first; the history holds both, in order."""
    llm_server.script(
        Reply(chunks=(TextChunk("First ", 0.1), TextChunk("answer.", 0.1))),
        Reply.text("Second answer."),
    )
    runner, who = TurnRunner(), persona(chat_model)
    first, second = await asyncio.gather(
        run(runner, who, talk.request("one", trace_id="t1")),
        run(runner, who, talk.request("two", trace_id="t2")),
    )
    assert (first.text, second.text) == ("First answer.", "Second answer.")
    sent = llm_server.requests[1]["messages"]
    assert isinstance(sent, list)
    assert [m["content"] for m in sent[1:]] == ["one", "First answer.", "two"]
    stored = await talk.history("conv-1").load()
    assert [m.content for m in stored] == ["one", "First answer.", "two", "Second answer."]
