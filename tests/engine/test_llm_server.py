"""The local OpenAI-compatible server, exercised through the real `openai` SDK."""

import asyncio
import json
import logging
import math
from collections.abc import AsyncIterator, Iterable
from dataclasses import replace

import openai
import pytest
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
)

from custom_components.companion_agent.engine import sdk_http
from tests.support.llm_server import (
    LLMServer,
    ReasoningChunk,
    Reply,
    TextChunk,
    ToolCallChunk,
    embed,
)

MODEL = "test-model"
HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Hello there"}]
# A stream cut mid-way: openai 2.x lets the transport's error through, 3.x wraps it.
CUT_STREAM = (sdk_http.package.RemoteProtocolError, openai.APIConnectionError)


def transport_error(err: BaseException) -> BaseException | None:
    """Return the transport's own error: ``err``, or what the SDK wrapped."""
    return err.__cause__ if isinstance(err, openai.APIConnectionError) else err


TIME_TOOL: ChatCompletionToolUnionParam = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}


@pytest.fixture
async def server(socket_enabled: None) -> AsyncIterator[LLMServer]:
    """Run a server for one test."""
    async with LLMServer() as server:
        yield server


@pytest.fixture
async def client(server: LLMServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """Return an SDK client pointed at the server, without retries."""
    async with openai.AsyncOpenAI(base_url=server.url, api_key="sk-test", max_retries=0) as client:
        yield client


async def stream(
    client: openai.AsyncOpenAI,
    messages: Iterable[ChatCompletionMessageParam] = HELLO,
    tools: Iterable[ChatCompletionToolUnionParam] | openai.Omit = openai.omit,
) -> list[ChatCompletionChunk]:
    """Stream one completion and return every chunk."""
    response = await client.chat.completions.create(
        model=MODEL, messages=messages, tools=tools, stream=True
    )
    return [chunk async for chunk in response]


async def read_into(response: openai.AsyncStream[ChatCompletionChunk], texts: list[str]) -> None:
    """Append the content of each streamed chunk to `texts` until the stream ends."""
    async for chunk in response:
        texts.append(chunk.choices[0].delta.content or "")


def text_of(chunks: list[ChatCompletionChunk]) -> str:
    """Join the content of every chunk."""
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def tool_calls_of(chunks: list[ChatCompletionChunk]) -> dict[int, tuple[str, str, str]]:
    """Reassemble streamed tool calls by index into (id, name, arguments)."""
    calls: dict[int, tuple[str, str, str]] = {}
    for chunk in chunks:
        for call in chunk.choices[0].delta.tool_calls or []:
            call_id, name, arguments = calls.get(call.index, ("", "", ""))
            function = call.function
            calls[call.index] = (
                call.id or call_id,
                (function.name if function else None) or name,
                arguments + ((function.arguments if function else None) or ""),
            )
    return calls


async def test_streams_text_in_chunks(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Stream scripted text as OpenAI-shaped chunks ending with finish_reason."""
    server.script(Reply.text("Hello, world!", chunk_size=4))

    chunks = await stream(client)

    assert text_of(chunks) == "Hello, world!"
    assert [c.choices[0].delta.content for c in chunks[:-1]] == ["Hell", "o, w", "orld", "!"]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.choices[0].delta.role is None for c in chunks[1:])
    assert [c.choices[0].finish_reason for c in chunks] == [None] * 4 + ["stop"]
    assert {c.id for c in chunks} == {chunks[0].id}
    assert {(c.object, c.model) for c in chunks} == {("chat.completion.chunk", MODEL)}
    assert server.requests == [
        {"model": MODEL, "messages": [{"role": "user", "content": "Hello there"}], "stream": True}
    ]


async def test_answers_without_streaming(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Aggregate a reply into one chat.completion when stream is false."""
    server.script(
        Reply(
            chunks=(TextChunk("Hi "), ReasoningChunk("think"), TextChunk("you")),
            usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        )
    )

    completion = await client.chat.completions.create(model=MODEL, messages=HELLO)

    choice = completion.choices[0]
    assert completion.object == "chat.completion"
    assert choice.message.content == "Hi you"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert (choice.message.model_extra or {})["reasoning_content"] == "think"
    assert completion.usage is not None
    assert completion.usage.total_tokens == 5


async def test_reassembles_split_tool_call_arguments(
    server: LLMServer, client: openai.AsyncOpenAI
) -> None:
    """Stream one tool call's arguments over several chunks, id and name first only."""
    arguments = '{"zone": "Europe/Paris"}'
    server.script(Reply.tool_calls(("call_1", "get_time", arguments), split=3))

    chunks = await stream(client, tools=[TIME_TOOL])

    deltas = [c.choices[0].delta for c in chunks if c.choices[0].delta.tool_calls]
    assert len(deltas) == 3
    first, *rest = [d.tool_calls[0] for d in deltas if d.tool_calls]
    assert (first.id, first.type, first.function and first.function.name) == (
        "call_1",
        "function",
        "get_time",
    )
    assert all(call.id is None and call.function and call.function.name is None for call in rest)
    assert tool_calls_of(chunks) == {0: ("call_1", "get_time", arguments)}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert text_of(chunks) == ""


async def test_interleaves_two_tool_calls(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Tell two interleaved tool calls apart by index, streamed and not."""
    calls = (("call_a", "get_time", '{"zone": "UTC"}'), ("call_b", "get_date", '{"fmt": "iso"}'))
    server.script(Reply.tool_calls(*calls), Reply.tool_calls(*calls, interleave=False))

    chunks = await stream(client, tools=[TIME_TOOL])
    completion = await client.chat.completions.create(model=MODEL, messages=HELLO)

    indexes = [d.index for c in chunks for d in c.choices[0].delta.tool_calls or []]
    assert indexes == [0, 1, 0, 1, 0, 1]
    assert tool_calls_of(chunks) == {0: calls[0], 1: calls[1]}
    message = completion.choices[0].message
    assert message.content is None
    assert [
        (call.id, call.function.name, call.function.arguments)
        for call in message.tool_calls or []
        if call.type == "function"
    ] == list(calls)
    assert completion.choices[0].finish_reason == "tool_calls"


async def test_can_omit_finish_reason(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """End a stream with [DONE] but no finish_reason on any chunk."""
    server.script(Reply(chunks=(TextChunk("no "), TextChunk("reason")), finish_reason=None))

    chunks = await stream(client)

    assert text_of(chunks) == "no reason"
    assert [c.choices[0].finish_reason for c in chunks] == [None, None]


async def test_streams_reasoning_content(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Send reasoning as delta.reasoning_content and <think> text as plain content."""
    server.script(
        Reply(chunks=(ReasoningChunk("Let me "), ReasoningChunk("see."), TextChunk("Done."))),
        Reply.text("<think>hmm</think>Yes."),
    )

    reasoning_chunks = await stream(client)
    think_chunks = await stream(client)

    reasoning = [
        (c.choices[0].delta.model_extra or {}).get("reasoning_content") for c in reasoning_chunks
    ]
    assert reasoning == ["Let me ", "see.", None, None]
    assert text_of(reasoning_chunks) == "Done."
    assert text_of(think_chunks) == "<think>hmm</think>Yes."


@pytest.mark.parametrize(
    ("status", "error"),
    [(500, openai.InternalServerError), (429, openai.RateLimitError)],
)
async def test_fails_before_first_chunk(
    server: LLMServer,
    client: openai.AsyncOpenAI,
    status: int,
    error: type[openai.APIStatusError],
) -> None:
    """Answer a scripted error status with an OpenAI error body; the SDK raises."""
    server.script(Reply.error(status), Reply.text("after"))

    with pytest.raises(error) as caught:
        await stream(client)

    assert caught.value.status_code == status
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["message"]
    assert text_of(await stream(client)) == "after"


async def test_cuts_stream_after_some_chunks(
    server: LLMServer, client: openai.AsyncOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """Close the connection mid-stream without [DONE]; the SDK's iteration raises."""
    server.script(replace(Reply.text("abcdefgh", chunk_size=2), cut_after=2))
    received: list[str] = []

    response = await client.chat.completions.create(model=MODEL, messages=HELLO, stream=True)
    with pytest.raises(CUT_STREAM) as caught:
        await read_into(response, received)
    assert isinstance(transport_error(caught.value), sdk_http.package.RemoteProtocolError)

    assert received == ["ab", "cd"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_cuts_non_streaming_answer(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Drop the connection without any response when a non-streamed reply is cut."""
    server.script(replace(Reply.text("lost"), cut_after=0))

    with pytest.raises(openai.APIConnectionError):
        await client.chat.completions.create(model=MODEL, messages=HELLO)


async def test_rejects_wrong_api_key(socket_enabled: None) -> None:
    """Answer 401 to a wrong bearer token, so the SDK raises AuthenticationError."""
    async with LLMServer(api_key="sk-right") as server:
        async with openai.AsyncOpenAI(base_url=server.url, api_key="sk-wrong") as wrong:
            with pytest.raises(openai.AuthenticationError):
                await wrong.models.list()
            with pytest.raises(openai.AuthenticationError):
                await wrong.chat.completions.create(model=MODEL, messages=HELLO)
        async with openai.AsyncOpenAI(base_url=server.url, api_key="sk-right") as right:
            models = await right.models.list()

    assert [model.id for model in models.data] == ["test-model"]
    assert server.requests == []


async def test_lists_models(socket_enabled: None) -> None:
    """List the configured models."""
    async with (
        LLMServer(models=("alpha", "beta")) as server,
        openai.AsyncOpenAI(base_url=server.url, api_key="sk-any") as client,
    ):
        models = await client.models.list()

    assert [(model.id, model.object) for model in models.data] == [
        ("alpha", "model"),
        ("beta", "model"),
    ]


async def test_embeddings_are_deterministic_unit_vectors(client: openai.AsyncOpenAI) -> None:
    """Embed str and list inputs, as floats and as the SDK's default base64."""
    first = await client.embeddings.create(model="embed", input=["lamp", "kettle", "lamp"])
    again = await client.embeddings.create(
        model="embed", input="lamp", encoding_format="float", dimensions=16
    )
    wide = await client.embeddings.create(model="embed", input="lamp", dimensions=40)

    lamp, kettle, lamp_again = (item.embedding for item in first.data)
    assert [item.index for item in first.data] == [0, 1, 2]
    assert len(lamp) == 16
    assert lamp == pytest.approx(lamp_again)
    assert lamp == pytest.approx(again.data[0].embedding)
    assert lamp == pytest.approx(embed("lamp"), abs=1e-6)
    assert lamp != pytest.approx(kettle)
    assert math.fsum(x * x for x in kettle) == pytest.approx(1.0, abs=1e-5)
    assert len(wide.data[0].embedding) == 40


async def test_default_responder_echoes(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Echo the user when nothing is scripted, in several small chunks."""
    chunks = await stream(client, [{"role": "user", "content": "turn on the lamp"}])

    assert text_of(chunks) == "You said: turn on the lamp."
    pieces = [c.choices[0].delta.content for c in chunks if c.choices]
    assert pieces == ["You ", "said", ": tu", "rn o", "n th", "e la", "mp.", None]  # then "stop"
    assert server.pending == 0


@pytest.mark.parametrize("question", ["What time is it?", "现在几点了？"])
async def test_default_responder_calls_time_tool(client: openai.AsyncOpenAI, question: str) -> None:
    """Call an offered time tool when asked about the time, then summarise its result."""
    asked: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]

    chunks = await stream(client, asked, tools=[TIME_TOOL])
    ((call_id, name, arguments),) = tool_calls_of(chunks).values()
    answered = await stream(
        client,
        [
            *asked,
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "14:05"},
        ],
        tools=[TIME_TOOL],
    )

    assert (name, arguments) == ("get_time", "{}")
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert text_of(answered) == "It is 14:05."
    assert text_of(await stream(client, asked)) == f"You said: {question.rstrip('.')}."


@pytest.mark.parametrize(
    ("question", "answer"),
    [("What time is it?", "It is 14:05 on Monday."), ("现在几点了？", "现在是14:05。")],
)
async def test_default_responder_reads_a_clock_result(
    client: openai.AsyncOpenAI, question: str, answer: str
) -> None:
    """Say a structured time result as a clock time, in the asker's language."""
    result = json.dumps({"time": "14:05", "weekday": "Monday"})
    answered = await stream(
        client,
        [
            {"role": "user", "content": question},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": result},
        ],
    )
    assert text_of(answered) == answer


async def test_consumes_script_in_order(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Consume scripted replies first in, first out, then fall back to the default."""
    server.script(Reply.text("one"), Reply.text("two"))

    assert server.pending == 2
    answers = [text_of(await stream(client)) for _ in range(3)]

    assert answers == ["one", "two", "You said: Hello there."]
    assert server.pending == 0
    assert len(server.requests) == 3


async def test_streams_usage_when_asked(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Send a trailing usage-only chunk when stream_options.include_usage is set."""
    usage = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
    server.script(Reply(chunks=(TextChunk("ok"),), usage=usage))

    response = await client.chat.completions.create(
        model=MODEL, messages=HELLO, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in response]

    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.model_dump(exclude_none=True) == usage


async def test_applies_chunk_delays(server: LLMServer, client: openai.AsyncOpenAI) -> None:
    """Wait each chunk's delay before sending it."""
    server.script(Reply.text("slow", chunk_size=1, delay=0.05))
    loop = asyncio.get_running_loop()

    started = loop.time()
    await stream(client)

    assert loop.time() - started >= 0.18


async def test_survives_client_disconnect_mid_stream(
    server: LLMServer, client: openai.AsyncOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """Stop a stream quietly when the client hangs up, and keep serving."""
    server.script(Reply.text("x" * 50, chunk_size=1, delay=0.02))

    response = await client.chat.completions.create(model=MODEL, messages=HELLO, stream=True)
    async for _ in response:
        break
    await response.close()
    await asyncio.sleep(0.1)

    assert text_of(await stream(client)) == "You said: Hello there."
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_close_cuts_open_streams_and_frees_port(socket_enabled: None) -> None:
    """Close promptly while a stream is open, refusing connections afterwards."""
    server = LLMServer()
    await server.start()
    port = server.url.split(":")[-1].split("/")[0]
    server.script(Reply.text("y" * 100, chunk_size=1, delay=0.5))
    async with openai.AsyncOpenAI(base_url=server.url, api_key="k", max_retries=0) as client:
        response = await client.chat.completions.create(model=MODEL, messages=HELLO, stream=True)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await server.close()
        assert loop.time() - started < 2.0
        with pytest.raises(CUT_STREAM) as caught:
            await read_into(response, [])
        assert isinstance(transport_error(caught.value), sdk_http.package.RemoteProtocolError)

    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", int(port))
    with pytest.raises(RuntimeError):
        _ = server.url


def test_reply_builders_validate_input() -> None:
    """Refuse builder arguments that cannot describe a reply."""
    with pytest.raises(ValueError, match="chunk_size"):
        Reply.text("x", chunk_size=0)
    with pytest.raises(ValueError, match="split"):
        Reply.tool_calls(("c", "n", "{}"), split=0)
    with pytest.raises(ValueError, match="status"):
        Reply.error(200)
    assert Reply.tool_calls(("c", "n", "ab"), split=3).chunks == (
        ToolCallChunk(0, "", id="c", name="n"),
        ToolCallChunk(0, "a"),
        ToolCallChunk(0, "b"),
    )
