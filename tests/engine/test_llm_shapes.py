"""Every recorded vendor shape through the real SDK and the adapter: one normalised result.

The scripted server replays each stream in ``tests/support/streams`` byte for byte (see its
README for where each shape comes from); whatever the vendor, the adapter yields text,
``ThinkingDelta`` and one ``RoundEnd`` with complete calls, ``tool_calls`` as the finish
reason when there are calls, and usage when the server sent it.
"""

from __future__ import annotations

import json
import logging

import pytest

from custom_components.companion_agent.engine.events import ThinkingDelta
from custom_components.companion_agent.engine.llm import (
    LLMItem,
    LLMSettings,
    OpenAIChatModel,
    RoundEnd,
)
from custom_components.companion_agent.engine.messages import UserMessage
from custom_components.companion_agent.engine.tools.contract import ToolSpec
from tests.support.llama_recording import TURN_OFF, TURN_ON
from tests.support.llm_script import Refusal, Reply
from tests.support.llm_server import LLMServer
from tests.support.tool_specs import CLOCK, WEATHER

TOOLS = [WEATHER, CLOCK]
PARIS = {"city": "Paris"}


async def stream(model: OpenAIChatModel, tools: list[ToolSpec] = TOOLS) -> list[LLMItem]:
    """Stream one response to a fixed question."""
    return [item async for item in model.stream_with_tools([UserMessage(content="Hi")], tools)]


def split(items: list[LLMItem]) -> tuple[str, str, RoundEnd]:
    """Return the text, the thinking and the end of one response."""
    end = items[-1]
    assert isinstance(end, RoundEnd)
    assert not [i for i in items[:-1] if isinstance(i, RoundEnd)]
    text = "".join(i for i in items if isinstance(i, str))
    thinking = "".join(i.text for i in items if isinstance(i, ThinkingDelta))
    return text, thinking, end


def calls(end: RoundEnd) -> list[tuple[str, dict[str, object]]]:
    """Return (name, parsed arguments) of each call, in order."""
    return [(c.name, json.loads(c.arguments)) for c in end.tool_calls]


@pytest.mark.parametrize(
    "case",
    [
        (
            "openai_parallel_tool_calls",
            "",
            [("get_weather", PARIS), ("get_time", {"zone": "Europe/Paris"})],
            143,
        ),
        ("ollama_reasoning_tool_call", "call get_weather.", [("get_weather", PARIS)], 268),
        ("ollama_v0_5_stop_with_tool_call", "", [("get_weather", PARIS)], 211),
        (
            "ollama_v0_4_calls_without_index",
            "",
            [("get_weather", PARIS), ("get_time", {"zone": "Europe/Paris"})],
            None,
        ),
        ("llamacpp_reasoning_tool_call", "in Paris.", [("get_weather", PARIS)], 273),
        ("vllm_reasoning_tool_call", "use get_weather.", [("get_weather", PARIS)], 271),
        ("lmstudio_v0_3_14_stop_with_tool_call", "", [("get_weather", PARIS)], None),
    ],
)
async def test_recorded_tool_call_shapes_end_the_same(
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
    case: tuple[str, str, list[tuple[str, dict[str, object]]], int | None],
) -> None:
    """Calls whole and in order, ids unique, finish ``tool_calls``, thinking apart, usage kept."""
    shape, thinking, expected, usage = case
    llm_server.script(Reply.recorded(shape))
    text, thought, end = split(await stream(chat_model))
    assert text == ""
    assert thought.endswith(thinking)
    assert end.error is None
    assert end.finish_reason == "tool_calls"
    assert calls(end) == expected
    assert len({c.call_id for c in end.tool_calls}) == len(expected)
    assert all(c.call_id for c in end.tool_calls)
    assert end.usage.get("total_tokens") == usage


@pytest.mark.parametrize(
    "case",
    [
        ("openai_text_usage_last", "It is sunny in Paris.", "", 50),
        (
            "vllm_reasoning_content",
            "Hello! How can I help?",
            "The person greets me. Greet back.",
            44,
        ),
        ("lmstudio_reasoning", "Hi there!", "User says hi. Reply briefly.", 84),
        (
            "llamacpp_think_in_content",
            "\n\nIt is noon.",
            "The user wants the time. Do not say this aloud.",
            None,
        ),
    ],
)
async def test_recorded_text_shapes_keep_thinking_apart(
    llm_server: LLMServer, chat_model: OpenAIChatModel, case: tuple[str, str, str, int | None]
) -> None:
    """Reasoning fields and ``<think>`` become thinking; the text is only the answer."""
    shape, text, thinking, usage = case
    llm_server.script(Reply.recorded(shape))
    said, thought, end = split(await stream(chat_model))
    assert (said, thought) == (text, thinking)
    assert (end.finish_reason, end.tool_calls, end.error) == ("stop", (), None)
    assert end.usage.get("total_tokens") == usage


async def test_a_template_that_opens_think_is_learnt_from_its_lone_close(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """The first reply's thinking shows as text (nothing told it apart); from then on the
    adapter holds a reply as thinking until ``</think>``, and a reply without one is text."""
    llm_server.script(
        Reply.recorded("vllm_template_opens_think"),
        Reply.recorded("vllm_template_opens_think"),
        Reply.text("Just an answer."),
    )
    first, second, third = [split(await stream(chat_model)) for _ in range(3)]
    assert (first[0], first[1]) == ("Okay, the person greets me. Keep it short.\n\n\nHello!", "")
    assert (second[0], second[1]) == ("\n\nHello!", "Okay, the person greets me. Keep it short.\n")
    assert (third[0], third[1]) == ("Just an answer.", "")


@pytest.mark.parametrize("shape", ["ollama_tool_call_as_text", "lmstudio_tool_call_in_content"])
async def test_a_call_written_as_text_is_a_call_and_never_text(
    llm_server: LLMServer, chat_model: OpenAIChatModel, shape: str
) -> None:
    """JSON or ``<tool_call>`` in content: taken out, arguments repaired, never said."""
    llm_server.script(Reply.recorded(shape))
    text, _, end = split(await stream(chat_model))
    assert text == ""
    assert end.finish_reason == "tool_calls"
    assert calls(end) == [("get_weather", PARIS)]


async def test_a_call_written_as_text_without_tools_offered_stays_text(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """With no tools (a structured memory answer), JSON in content is the answer itself."""
    llm_server.script(Reply.recorded("ollama_tool_call_as_text"))
    text, _, end = split(await stream(chat_model, tools=[]))
    assert json.loads(text) == {"name": "get_weather", "parameters": PARIS}
    assert end.tool_calls == ()


async def test_usage_chunks_are_sent_only_when_asked(llm_server: LLMServer) -> None:
    """The replay is faithful: no ``stream_options``, no usage chunk (as every server does)."""
    import openai

    llm_server.script(Reply.recorded("openai_text_usage_last"))
    async with openai.AsyncOpenAI(base_url=llm_server.url, api_key="k", max_retries=0) as client:
        response = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        chunks = [chunk async for chunk in response]
    assert all(chunk.choices for chunk in chunks)


@pytest.mark.parametrize(
    "refusal", ["azure_refuses_stream_options", "proxy_refuses_stream_options"]
)
async def test_a_server_refusing_stream_options_is_asked_again_without_them_once(
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
    caplog: pytest.LogCaptureFixture,
    refusal: str,
) -> None:
    """First turn: refused, asked again at once; later turns never send them; one log line."""
    llm_server.refuse(Refusal.recorded(refusal))
    llm_server.script(Reply.text("First."), Reply.text("Second."))
    with caplog.at_level(logging.WARNING):
        first = split(await stream(chat_model))
        second = split(await stream(chat_model))
    assert (first[0], second[0]) == ("First.", "Second.")
    assert first[2].error is None
    assert llm_server.refused == ["stream_options"]
    assert ["stream_options" in body for body in llm_server.requests] == [False, False]
    warnings = [r for r in caplog.records if "stream_options" in r.getMessage()]
    assert len(warnings) == 1


@pytest.mark.parametrize(
    "refusal", ["ollama_refuses_tools", "llamacpp_refuses_tools", "vllm_refuses_tools"]
)
async def test_a_server_refusing_tools_still_answers_and_is_remembered(
    llm_server: LLMServer, caplog: pytest.LogCaptureFixture, refusal: str
) -> None:
    """Tools refused (400 or 500): the same turn answers without them; no later turn sends them."""
    model = OpenAIChatModel(LLMSettings(base_url=llm_server.url, model="small", chunk_timeout=5))
    llm_server.refuse(Refusal.recorded(refusal))
    llm_server.script(Reply.text("No tools, but hello."), Reply.text("Still here."))
    with caplog.at_level(logging.WARNING):
        first = split(await stream(model))
        second = split(await stream(model))
    await model.aclose()
    assert (first[0], second[0]) == ("No tools, but hello.", "Still here.")
    assert first[2].error is None
    assert set(llm_server.refused) == {"tools"}
    assert ["tools" in body for body in llm_server.requests] == [False, False]
    assert len([r for r in caplog.records if "refuses tools" in r.getMessage()]) == 1


async def test_a_server_refusing_both_answers_after_two_retries(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """stream_options and tools refused in turn: the first turn still answers."""
    llm_server.refuse(
        Refusal.recorded("azure_refuses_stream_options"), Refusal.recorded("vllm_refuses_tools")
    )
    llm_server.script(Reply.text("Hello."))
    text, _, end = split(await stream(chat_model))
    assert (text, end.error) == ("Hello.", None)
    assert llm_server.refused == ["stream_options", "tools"]


async def test_other_refusals_are_errors_not_retries(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A 400 about something else ends the round with the error; nothing is dropped."""
    llm_server.refuse(Refusal(field="messages", status=400, body={"error": {"message": "bad"}}))
    _, _, end = split(await stream(chat_model))
    assert end.error is not None
    assert end.error.status == 400
    assert llm_server.refused == ["messages"]


async def test_llama_cpp_recordings_replay_as_the_live_server_answered(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Recorded from llama.cpp's server and SmolLM2: a reply with usage; a call as JSON text."""
    llm_server.script(
        Reply.recorded("llamacpp_smollm2_text"),
        Reply.recorded("llamacpp_smollm2_tool_call_as_text"),
    )
    text, _, end = split(await stream(chat_model, [TURN_ON, TURN_OFF]))
    assert text == "Hello, I'm a friendly home assistant. What's your name?"
    assert (end.finish_reason, end.tool_calls, end.error) == ("stop", (), None)
    assert end.usage.get("total_tokens") == 48
    text, _, end = split(await stream(chat_model, [TURN_ON, TURN_OFF]))
    assert text == ""
    assert end.finish_reason == "tool_calls"
    assert calls(end) == [("HassTurnOn", {"name": "kitchen light"})]
