"""A model server that ends, stalls or breaks off: cut, first-token and gap deadlines.

The real openai SDK against the local streaming server; a real exchange store.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel
from custom_components.companion_agent.engine.messages import AssistantMessage
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.llm_script import Reply, TextChunk, ToolCallChunk
from tests.support.llm_server import LLMServer, SilentServer
from tests.support.turns import Conversations, persona, run

CUT_LINE = "Sorry, I lost my connection to the language model."
DOWN_LINE = "Sorry, I can't reach my language model right now. Please try again in a moment."
SLOW_LINE = "Sorry, my language model is taking too long right now. Please try again in a moment."


@pytest.fixture
async def quick_model(llm_server: LLMServer) -> AsyncIterator[OpenAIChatModel]:
    """Return the SDK adapter with short deadlines: first token 0.5 s, gaps 0.5 s."""
    settings = LLMSettings(
        base_url=llm_server.url,
        model="test-model",
        first_token_timeout=0.5,
        chunk_timeout=0.5,
    )
    model = OpenAIChatModel(settings)
    yield model
    await model.aclose()


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


async def test_a_stream_that_ends_unfinished_is_cut_and_marked(
    llm_server: LLMServer, quick_model: OpenAIChatModel, talk: Conversations
) -> None:
    """No finish_reason and no [DONE]: the fragment stays, a notice follows, history says cut."""
    chunks = (TextChunk("The kitchen light "), TextChunk("is "))
    llm_server.script(Reply(chunks=chunks, finish_reason=None, send_done=False))
    done = await run(TurnRunner(), persona(quick_model), talk.request("Kitchen?"))
    assert done.result.outcome == "cut"
    assert done.text == f"The kitchen light is \n{CUT_LINE}"
    [_, answer] = await talk.history("conv-1").load()
    assert isinstance(answer, AssistantMessage)
    assert answer.content.endswith("the person heard only the text above]")


async def test_a_tool_call_of_an_unfinished_round_is_not_run(
    llm_server: LLMServer, quick_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A call that arrived whole just before the stream stopped unfinished never runs."""
    ran: list[str] = []

    async def unlock(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Record that it ran."""
        ran.append("unlock")
        return "unlocked"

    tool = Tool(spec=ToolSpec(name="unlock", description="Unlock"), handler=unlock)
    whole = (ToolCallChunk(0, "{}", id="call_1", name="unlock"),)
    llm_server.script(
        Reply(chunks=whole, finish_reason=None, send_done=False), Reply.text("Not done.")
    )
    done = await run(TurnRunner(), persona(quick_model), talk.request("Unlock", tools=[tool]))
    assert ran == []
    [event] = done.result.tool_calls
    assert (event.tool_name, event.status) == ("unlock", "error")
    assert "cut off mid-stream" in (event.result or "")


async def test_a_missing_finish_reason_with_a_proper_end_is_tolerated(
    llm_server: LLMServer, quick_model: OpenAIChatModel, talk: Conversations
) -> None:
    """[DONE] came: the answer is complete even though no finish_reason was sent."""
    llm_server.script(Reply(chunks=(TextChunk("All fine."),), finish_reason=None))
    done = await run(TurnRunner(), persona(quick_model), talk.request("Status?"))
    assert done.result.outcome == "complete"
    assert done.text == "All fine."


async def test_a_server_that_never_answers_gets_the_apology_within_a_second(
    socket_enabled: None, talk: Conversations
) -> None:
    """One first-token deadline over connect, retries and the headers: then words."""
    async with SilentServer() as silent:
        settings = LLMSettings(base_url=silent.url, model="test-model", first_token_timeout=0.5)
        model = OpenAIChatModel(settings)
        started = time.monotonic()
        done = await run(TurnRunner(), persona(model), talk.request("Hello?"))
        took = time.monotonic() - started
        await model.aclose()
    assert took < 0.5 + 1.0
    assert done.result.outcome == "failed"
    assert done.result.reason == "the model server did not answer in time"
    assert done.text == DOWN_LINE


async def test_a_server_that_took_the_request_and_stays_silent_is_slow(
    llm_server: LLMServer, talk: Conversations
) -> None:
    """Headers sent, no token within the busy wait: the "slow" line, and the record says so."""
    llm_server.script(Reply(chunks=(TextChunk("late", 30.0),)))
    settings = LLMSettings(
        base_url=llm_server.url, model="test-model", first_token_timeout=0.5, busy_timeout=1.0
    )
    model = OpenAIChatModel(settings)
    started = time.monotonic()
    done = await run(TurnRunner(), persona(model), talk.request("Hello?"))
    took = time.monotonic() - started
    await model.aclose()
    assert 1.0 <= took < 1.0 + 1.0
    assert done.result.outcome == "failed"
    assert done.result.reason == "the model server accepted the request but sent no token in time"
    assert done.text == SLOW_LINE


async def test_a_stall_between_chunks_ends_the_answer_within_a_second(
    llm_server: LLMServer, quick_model: OpenAIChatModel, talk: Conversations
) -> None:
    """The gap deadline: what was said stays, the notice follows soon after the stall."""
    llm_server.script(Reply(chunks=(TextChunk("Let me see. "), TextChunk("Well", 30.0))))
    started = time.monotonic()
    done = await run(TurnRunner(), persona(quick_model), talk.request("Hm?"))
    assert time.monotonic() - started < 0.5 + 1.0
    assert done.result.outcome == "cut"
    assert done.text == f"Let me see. \n{CUT_LINE}"
