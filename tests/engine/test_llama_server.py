"""The adapter against llama.cpp's own server with a real model (SmolLM2-135M-Instruct).

What this server really does, as recorded in ``tests/support/streams/llamacpp_smollm2_*``:
plain text in ``content`` pieces, a finish chunk with an empty delta, the usage chunk when
asked; with SmolLM2's own chat template it drops ``tools`` and ignores ``tool_choice``, so a
call comes only as JSON the model writes in its text. The server samples greedily with a
fixed seed: the same request gets the same reply.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import openai
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

from custom_components.companion_agent.engine.llm import (
    LLMItem,
    LLMSettings,
    OpenAIChatModel,
    RoundEnd,
)
from custom_components.companion_agent.engine.messages import ChatMessage, UserMessage
from custom_components.companion_agent.engine.retry import NO_RETRY
from custom_components.companion_agent.engine.tools.contract import ToolSpec
from tests.support.llama import LlamaPeer, start_llama, wait_ready
from tests.support.llama_recording import (
    GREETING,
    KITCHEN_ON,
    RECORDINGS,
    STREAMS,
    TOOLS,
    record,
    request,
    shape,
)
from tests.support.peer_process import stop

STORY = (UserMessage(content="Tell me a long story about a cat who lives in a lighthouse."),)


def adapter(peer: LlamaPeer) -> OpenAIChatModel:
    """Return the real adapter pointed at ``peer``, without retries."""
    return OpenAIChatModel(LLMSettings(base_url=peer.url, model=peer.model, retry=NO_RETRY))


async def stream(
    peer: LlamaPeer, messages: tuple[ChatMessage, ...], tools: tuple[ToolSpec, ...] = ()
) -> tuple[list[str], RoundEnd]:
    """Stream one reply through the adapter; return its text pieces and its end."""
    model = adapter(peer)
    try:
        items: list[LLMItem] = [i async for i in model.stream_with_tools(messages, tools)]
    finally:
        await model.aclose()
    end = items[-1]
    assert isinstance(end, RoundEnd)
    return [i for i in items if isinstance(i, str)], end


async def test_a_reply_streams_through_the_adapter_in_pieces_with_usage(
    llama: LlamaPeer,
) -> None:
    """Text in many pieces, ``stop``, no calls, usage from the ``stream_options`` chunk."""
    pieces, end = await stream(llama, GREETING, TOOLS)
    assert len(pieces) > 5
    assert "".join(pieces) == "Hello, I'm a friendly home assistant. What's your name?"
    assert (end.finish_reason, end.tool_calls, end.error) == ("stop", (), None)
    assert end.usage["completion_tokens"] == 15
    assert end.usage["total_tokens"] > end.usage["completion_tokens"]


async def test_a_call_the_model_writes_as_json_becomes_a_call_and_is_never_said(
    llama: LlamaPeer,
) -> None:
    """SmolLM2's template shows no tools: shown how, it writes the call as JSON text."""
    pieces, end = await stream(llama, KITCHEN_ON, TOOLS)
    assert "".join(pieces) == ""
    assert end.finish_reason == "tool_calls"
    assert [(c.name, json.loads(c.arguments)) for c in end.tool_calls] == [
        ("HassTurnOn", {"name": "kitchen light"})
    ]


async def test_tool_choice_is_ignored_and_stream_options_are_honoured(llama: LlamaPeer) -> None:
    """``tools`` with ``tool_choice: required`` are accepted and change nothing (the template
    renders no tools): the same text as without them, no call. The usage chunk comes only
    with ``include_usage``."""
    tools: list[ChatCompletionFunctionToolParam] = [
        {"type": "function", "function": {"name": t.name, "parameters": dict(t.parameters)}}
        for t in TOOLS
    ]
    ask: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "Turn on the kitchen light"}
    ]
    async with openai.AsyncOpenAI(base_url=llama.url, api_key="k", max_retries=0) as client:
        required = [
            chunk
            async for chunk in await client.chat.completions.create(
                model=llama.model,
                messages=ask,
                tools=tools,
                tool_choice="required",
                stream=True,
                max_tokens=30,
            )
        ]
        without_tools = [
            chunk
            async for chunk in await client.chat.completions.create(
                model=llama.model,
                messages=ask,
                stream=True,
                stream_options={"include_usage": True},
                max_tokens=30,
            )
        ]
    deltas = [choice.delta for chunk in required for choice in chunk.choices]
    plain = [choice.delta for chunk in without_tools for choice in chunk.choices]
    assert not [d for d in deltas if d.tool_calls]
    said = "".join(d.content or "" for d in deltas)
    assert said
    assert said == "".join(d.content or "" for d in plain)
    assert all(chunk.choices for chunk in required)
    assert all(chunk.usage is None for chunk in required)
    assert without_tools[-1].choices == []
    assert without_tools[-1].usage is not None
    assert without_tools[-1].usage.completion_tokens > 0


async def test_a_server_stopped_mid_reply_is_a_cut_stream(socket_enabled: None) -> None:
    """The server dies after the first words: the text so far, then an error, no ``stop``."""
    with tempfile.TemporaryDirectory() as tmp:
        peer = start_llama(Path(tmp) / "llama.log")
        try:
            await wait_ready(peer)
            model = adapter(peer)
            items: list[LLMItem] = []
            try:
                async for item in model.stream_with_tools(STORY, TOOLS):
                    items.append(item)
                    if isinstance(item, str) and peer.process.poll() is None:
                        peer.process.kill()
            finally:
                await model.aclose()
        finally:
            stop(peer.process)
    end = items[-1]
    assert isinstance(end, RoundEnd)
    assert [i for i in items[:-1] if isinstance(i, RoundEnd)] == []
    assert "".join(i for i in items if isinstance(i, str))
    assert end.error is not None
    assert end.finish_reason != "stop"
    assert end.tool_calls == ()


async def test_the_recordings_are_what_the_server_sends(llama: LlamaPeer) -> None:
    """Each recording in ``streams/`` matches a live stream, but for ids, times, timings."""
    for name, (messages, tools) in RECORDINGS.items():
        live = await record(llama.url, request(llama.model, messages, tools))
        recorded = (STREAMS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert [shape(p) for p in live] == [shape(p) for p in recorded if p.strip()], name
