"""The OpenAI-compatible adapter: quirks normalised, errors mapped, timeouts set."""

from __future__ import annotations

import pytest

from custom_components.companion_agent.engine.errors import LLMAuthError, LLMConnectionError
from custom_components.companion_agent.engine.events import ThinkingDelta
from custom_components.companion_agent.engine.llm import (
    LLMItem,
    LLMSettings,
    OpenAIChatModel,
    RoundEnd,
)
from custom_components.companion_agent.engine.llm.think import ThinkSplitter
from custom_components.companion_agent.engine.messages import UserMessage
from custom_components.companion_agent.engine.retry import NO_RETRY
from tests.support.llm_script import ReasoningChunk, Reply, TextChunk, ToolCallChunk
from tests.support.llm_server import LLMServer


async def stream(model: OpenAIChatModel) -> list[LLMItem]:
    """Stream one response to a fixed question."""
    return [item async for item in model.stream_with_tools([UserMessage(content="Hi")], [])]


async def test_reasoning_content_is_thinking_not_text(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """``reasoning_content`` comes out as ThinkingDelta, never as spoken text."""
    llm_server.script(
        Reply(
            chunks=(
                ReasoningChunk("User greets. "),
                ReasoningChunk("Greet back."),
                TextChunk("Hello!"),
            )
        )
    )
    items = await stream(chat_model)
    assert [i.text for i in items if isinstance(i, ThinkingDelta)] == [
        "User greets. ",
        "Greet back.",
    ]
    assert [i for i in items if isinstance(i, str)] == ["Hello!"]


async def test_a_think_block_split_mid_tag_is_kept_out_of_the_text(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A ``<think>`` block split mid-tag is still kept out of the text."""
    llm_server.script(Reply.text("<think>the user wants light</think>Turning it on.", chunk_size=3))
    items = await stream(chat_model)
    assert "".join(i for i in items if isinstance(i, str)) == "Turning it on."
    thinking = "".join(i.text for i in items if isinstance(i, ThinkingDelta))
    assert thinking == "the user wants light"


def test_think_splitter_drops_a_closing_tag_without_its_opening() -> None:
    """Servers whose template opens the block leave a lone ``</think>``: it is never shown."""
    splitter = ThinkSplitter()
    out = [*splitter.feed("Sure.</th"), *splitter.feed("ink> Done."), *splitter.flush()]
    assert "".join(i for i in out if isinstance(i, str)) == "Sure. Done."
    assert not [i for i in out if isinstance(i, ThinkingDelta)]


def test_think_splitter_releases_a_lone_angle_bracket() -> None:
    """Text that only looks like the start of a tag is released at the end."""
    splitter = ThinkSplitter()
    out = [*splitter.feed("1 <"), *splitter.feed(" 2 <th"), *splitter.flush()]
    assert "".join(i for i in out if isinstance(i, str)) == "1 < 2 <th"


async def test_missing_ids_are_invented_and_never_repeat(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A call without an id gets one; the next response's invented id is another one."""
    chunks = (ToolCallChunk(0, '{"a":', name="first"), ToolCallChunk(0, " 1}"))
    llm_server.script(
        Reply(chunks=chunks, finish_reason=None), Reply(chunks=chunks, finish_reason=None)
    )
    ends = [(await stream(chat_model))[-1] for _ in range(2)]
    assert all(isinstance(end, RoundEnd) for end in ends)
    first, second = (end.tool_calls for end in ends if isinstance(end, RoundEnd))
    assert [(c.name, c.arguments) for c in first] == [("first", '{"a": 1}')]
    assert first[0].call_id.startswith("call_0_")
    assert first[0].call_id != second[0].call_id


async def test_usage_is_reported(llm_server: LLMServer, chat_model: OpenAIChatModel) -> None:
    """Token counts sent with include_usage reach the RoundEnd."""
    llm_server.script(
        Reply(
            chunks=(TextChunk("Hi."),),
            usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
        )
    )
    end = (await stream(chat_model))[-1]
    assert isinstance(end, RoundEnd)
    assert end.usage == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}


async def test_wrong_key_is_an_auth_error(socket_enabled: None) -> None:
    """A rejected key raises LLMAuthError from list_models and ends a stream with it."""
    async with LLMServer(api_key="right") as server:
        model = OpenAIChatModel(
            LLMSettings(base_url=server.url, model="test-model", api_key="wrong", retry=NO_RETRY)
        )
        with pytest.raises(LLMAuthError):
            await model.list_models()
        end = (await stream(model))[-1]
        await model.aclose()
    assert isinstance(end, RoundEnd)
    assert isinstance(end.error, LLMAuthError)


async def test_unreachable_server_is_a_connection_error(socket_enabled: None) -> None:
    """Nothing listening: a connection error, well inside the connect timeout."""
    async with LLMServer() as server:
        url = server.url
    model = OpenAIChatModel(LLMSettings(base_url=url, model="m", retry=NO_RETRY, connect_timeout=1))
    with pytest.raises(LLMConnectionError):
        await model.list_models()
    await model.aclose()


async def test_the_models_the_server_offers_are_listed(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """The models the server offers are listed."""
    assert await chat_model.list_models() == ["test-model"]
