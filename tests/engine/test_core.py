"""ToolLoop.run_turn through the real openai SDK against the local streaming server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import replace

import pytest

from custom_components.companion_agent.engine.events import (
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
)
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel
from custom_components.companion_agent.engine.llm.adapter import MODEL_RETRY
from custom_components.companion_agent.engine.messages import (
    ChatMessage,
    SystemMessage,
    UserMessage,
)
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool, ToolExecutor, ToolRegistry
from custom_components.companion_agent.engine.turn.loop import LoopItem, ToolLoop, TurnRecord
from tests.support.lines import ENGLISH
from tests.support.llm_script import Reply, TextChunk, ToolCallChunk
from tests.support.llm_server import LLMServer

CTX = ToolContext(conversation_id="conv-1", user_id="user-1", trace_id="t1", language="en")
MESSAGES: list[ChatMessage] = [
    SystemMessage(content="You are a test."),
    UserMessage(content="Hi"),
]


class Recorder:
    """Tools that record what ran, in order."""

    def __init__(self) -> None:
        """Start with an empty log."""
        self.log: list[str] = []

    def tool(self, name: str, result: JSONValue = "ok") -> Tool:
        """Return a tool that logs its start and end and returns ``result``."""

        async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
            """Log and answer."""
            self.log.append(f"start {name} {json.dumps(args, sort_keys=True)}")
            self.log.append(f"end {name}")
            return result

        parameters: JSONObject = {"type": "object", "properties": {"zone": {"type": "string"}}}
        spec = ToolSpec(name=name, description=name, parameters=parameters)
        return Tool(spec=spec, handler=handler)


def core_of(model: OpenAIChatModel, tools: ToolExecutor, *, max_rounds: int = 6) -> ToolLoop:
    """Return the loop with the glue's English spoken lines."""
    return ToolLoop(model, tools, ENGLISH, max_rounds=max_rounds)


RECORDS: dict[int, TurnRecord] = {}


async def collect(core: ToolLoop, messages: Sequence[ChatMessage] = MESSAGES) -> list[LoopItem]:
    """Run a turn and return every item it yielded; its record is kept for ``result_of``."""
    record = TurnRecord()
    items = [item async for item in core.run_turn(messages, CTX, record)]
    RECORDS[id(items)] = record
    return items


def text_of(items: Sequence[LoopItem]) -> str:
    """Join the text of a turn."""
    return "".join(item.text for item in items if isinstance(item, TextDelta))


def tool_events(items: Sequence[LoopItem]) -> list[tuple[str, str]]:
    """Return (tool name, status) of every tool event, in order."""
    return [(i.tool_name, i.status) for i in items if isinstance(i, ToolCallEvent)]


def result_of(items: Sequence[LoopItem]) -> TurnRecord:
    """Return the record of the turn that yielded ``items``."""
    return RECORDS[id(items)]


def sent_tool_messages(server: LLMServer, request: int) -> list[dict[str, object]]:
    """Return the tool messages the model received in one request."""
    messages = server.requests[request]["messages"]
    assert isinstance(messages, list)
    return [m for m in messages if m.get("role") == "tool"]


async def test_text_streams_token_by_token(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Text arrives as several tokens and the turn ends after one round."""
    llm_server.script(Reply.text("The light is on. Anything else?", chunk_size=3))
    items = await collect(core_of(chat_model, ToolRegistry()))
    tokens = [i.text for i in items if isinstance(i, TextDelta)]
    assert tokens == ["The", " li", "ght", " is", " on", ". A", "nyt", "hin", "g e", "lse", "?"]
    assert text_of(items) == "The light is on. Anything else?"
    assert result_of(items).rounds == 1
    assert result_of(items).text == "The light is on. Anything else?"
    assert "tools" not in llm_server.requests[0]


async def test_a_tool_call_runs_once_and_its_result_goes_back_before_the_answer(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A tool call runs once, its result goes back, and the answer streams."""
    rec = Recorder()
    llm_server.script(
        Reply.tool_calls(("call_1", "get_time", '{"zone": "Europe/Paris"}'), split=4),
        Reply.text("It is noon."),
    )
    items = await collect(core_of(chat_model, ToolRegistry([rec.tool("get_time", "12:00")])))
    assert rec.log == ['start get_time {"zone": "Europe/Paris"}', "end get_time"]
    assert tool_events(items) == [("get_time", "running"), ("get_time", "completed")]
    completed = [i for i in items if isinstance(i, ToolCallEvent)][-1]
    assert completed.args == {"zone": "Europe/Paris"}
    assert completed.result == "12:00"
    assert text_of(items) == "It is noon."
    assert sent_tool_messages(llm_server, 1) == [
        {"role": "tool", "tool_call_id": "call_1", "content": "12:00"}
    ]
    tools = llm_server.requests[0]["tools"]
    assert isinstance(tools, list)
    assert tools[0]["function"]["name"] == "get_time"


async def test_two_tools_of_one_round_run_concurrently(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Each tool waits for the other to start: only concurrent execution completes both."""
    started = {"a": asyncio.Event(), "b": asyncio.Event()}
    log: list[str] = []

    def meeting(name: str, other: str) -> Tool:
        """Return a tool that starts, waits for ``other`` to start, then ends."""

        async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
            """Meet the other tool."""
            log.append(f"start {name}")
            started[name].set()
            async with asyncio.timeout(5):
                await started[other].wait()
            log.append(f"end {name}")
            return name

        return Tool(spec=ToolSpec(name=name, description=name), handler=handler)

    llm_server.script(
        Reply.tool_calls(("call_a", "a", "{}"), ("call_b", "b", "{}")), Reply.text("Done.")
    )
    core = core_of(chat_model, ToolRegistry([meeting("a", "b"), meeting("b", "a")]))
    items = await collect(core)
    assert log[:2] == ["start a", "start b"]
    assert sorted(log[2:]) == ["end a", "end b"]
    events = tool_events(items)
    assert events[:2] == [("a", "running"), ("b", "running")]
    assert sorted(events[2:]) == [("a", "completed"), ("b", "completed")]
    assert [m["tool_call_id"] for m in sent_tool_messages(llm_server, 1)] == ["call_a", "call_b"]


async def test_invalid_json_arguments_are_not_executed(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Arguments that are not JSON never reach the tool; the model is told."""
    rec = Recorder()
    llm_server.script(
        Reply.tool_calls(("call_1", "get_time", '{"zone": "Eur')), Reply.text("Sorry.")
    )
    items = await collect(core_of(chat_model, ToolRegistry([rec.tool("get_time")])))
    assert rec.log == []
    assert tool_events(items) == [("get_time", "error")]
    told = sent_tool_messages(llm_server, 1)[0]["content"]
    assert isinstance(told, str)
    assert json.loads(told)["error"] == "validation"
    assert "not a JSON object; it was not run" in told


async def test_unknown_tool_lists_the_tools_available(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A call to a tool that does not exist gets an error naming the real tools."""
    rec = Recorder()
    llm_server.script(Reply.tool_calls(("call_1", "open_pod_bay", "{}")), Reply.text("No."))
    items = await collect(core_of(chat_model, ToolRegistry([rec.tool("get_time")])))
    assert tool_events(items) == [("open_pod_bay", "error")]
    told = sent_tool_messages(llm_server, 1)[0]["content"]
    assert isinstance(told, str)
    assert "open_pod_bay" in told
    assert "get_time" in told
    assert text_of(items) == "No."


async def test_raising_tool_becomes_an_error_and_the_loop_goes_on(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A tool that raises yields an error result; the model still answers."""

    async def broken(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Fail."""
        raise RuntimeError("the bulb exploded")

    tool = Tool(spec=ToolSpec(name="broken", description="fails"), handler=broken)
    llm_server.script(Reply.tool_calls(("call_1", "broken", "{}")), Reply.text("It failed."))
    items = await collect(core_of(chat_model, ToolRegistry([tool])))
    assert tool_events(items) == [("broken", "running"), ("broken", "error")]
    told = sent_tool_messages(llm_server, 1)[0]["content"]
    assert isinstance(told, str)
    assert "the bulb exploded" in told
    assert text_of(items) == "It failed."


async def test_rounds_exhausted_ends_with_a_spoken_apology(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A model that keeps calling tools is stopped after max_rounds with words, not an error."""
    rec = Recorder()
    llm_server.script(
        Reply.tool_calls(("call_1", "get_time", "{}")),
        Reply.tool_calls(("call_2", "get_time", "{}")),
        Reply.text("never sent"),
    )
    items = await collect(core_of(chat_model, ToolRegistry([rec.tool("get_time")]), max_rounds=2))
    assert len(llm_server.requests) == 2
    assert "more steps than I'm allowed" in text_of(items)
    assert result_of(items).rounds == 2
    assert llm_server.pending == 1


async def test_http_500_before_first_token_is_apologised_for(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A server error before any token becomes a plain-language apology."""
    llm_server.script(Reply.error(500))
    items = await collect(core_of(chat_model, ToolRegistry()))
    assert text_of(items) == (
        "Sorry, I can't reach my language model right now. Please try again in a moment."
    )


async def test_a_server_error_before_the_first_token_is_tried_again(llm_server: LLMServer) -> None:
    """With retries allowed, a 500 before the first token is retried and the turn answers."""
    model = OpenAIChatModel(
        LLMSettings(
            base_url=llm_server.url,
            model="test-model",
            retry=replace(MODEL_RETRY, attempts=2, first_delay=0.0),
        )
    )
    llm_server.script(Reply.error(500), Reply.text("Hello."))
    items = await collect(core_of(model, ToolRegistry()))
    await model.aclose()
    assert text_of(items) == "Hello."
    assert len(llm_server.requests) == 2


async def test_stream_cut_mid_text_keeps_what_was_said(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A cut stream keeps the text already spoken and adds a short notice."""
    chunks = (TextChunk("The kitchen "), TextChunk("light is "), TextChunk("now on."))
    llm_server.script(Reply(chunks=chunks, cut_after=2))
    items = await collect(core_of(chat_model, ToolRegistry()))
    assert text_of(items) == (
        "The kitchen light is \nSorry, I lost my connection to the language model."
    )
    assert len(llm_server.requests) == 1


async def test_stream_cut_mid_tool_call_is_not_executed(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A tool call cut mid-arguments never runs; the model is told and answers next round."""
    rec = Recorder()
    chunks = (
        ToolCallChunk(0, '{"zo', id="call_1", name="get_time"),
        ToolCallChunk(0, 'ne": "UTC"}'),
    )
    llm_server.script(
        Reply(chunks=chunks, finish_reason="tool_calls", cut_after=1),
        Reply.text("Let me try that again later."),
    )
    items = await collect(core_of(chat_model, ToolRegistry([rec.tool("get_time")])))
    assert rec.log == []
    assert tool_events(items) == [("get_time", "error")]
    told = sent_tool_messages(llm_server, 1)[0]
    assert told["tool_call_id"] == "call_1"
    assert "cut off mid-stream" in str(told["content"])
    assert text_of(items) == "Let me try that again later."


async def test_missing_finish_reason_still_runs_the_tools(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Servers that send no finish_reason still get their tool calls executed."""
    rec = Recorder()
    calls = Reply.tool_calls(("call_1", "get_time", "{}"))
    llm_server.script(Reply(chunks=calls.chunks, finish_reason=None), Reply.text("Noon."))
    items = await collect(core_of(chat_model, ToolRegistry([rec.tool("get_time")])))
    assert rec.log == ["start get_time {}", "end get_time"]
    assert text_of(items) == "Noon."


@pytest.mark.parametrize("max_rounds", [0, -1])
async def test_max_rounds_must_be_positive(chat_model: OpenAIChatModel, max_rounds: int) -> None:
    """A loop with no rounds is a configuration error."""
    with pytest.raises(ValueError, match="max_rounds"):
        ToolLoop(chat_model, ToolRegistry(), ENGLISH, max_rounds=max_rounds)


async def test_text_before_and_after_tools_is_separated(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Text of two rounds is not glued together into one sentence."""
    rec = Recorder()
    first = Reply.tool_calls(("call_1", "get_time", "{}"))
    llm_server.script(
        Reply(chunks=(TextChunk("Let me look."), *first.chunks), finish_reason="tool_calls"),
        Reply.text("It is noon."),
    )
    items = await collect(core_of(chat_model, ToolRegistry([rec.tool("get_time")])))
    assert text_of(items) == "Let me look.\nIt is noon."
    assert [type(i).__name__ for i in items if not isinstance(i, TextDelta)] == [
        "ToolCallEvent",
        "ToolCallEvent",
    ]
    assert not any(isinstance(i, ThinkingDelta) for i in items)
