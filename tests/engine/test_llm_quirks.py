"""Quirks no recorded stream shows, scripted chunk by chunk: the adapter still normalises them.

These chunks are synthetic (written here, not taken from a server's source): arguments as
JSON objects, fragments without index or id, broken arguments, content as a list of parts,
odd usage, the legacy ``function_call``, loops, and secrets in thinking.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from custom_components.companion_agent.engine.events import ThinkingDelta
from custom_components.companion_agent.engine.llm import LLMItem, OpenAIChatModel, RoundEnd
from custom_components.companion_agent.engine.messages import UserMessage
from custom_components.companion_agent.engine.tools.contract import ToolSpec
from tests.support.llm_script import RecordedChunk, Reply
from tests.support.llm_server import LLMServer
from tests.support.tool_specs import ALARM, WEATHER


def chunk(
    delta: Mapping[str, object] | None = None, finish: str | None = None, **extra: object
) -> str:
    """Return one chunk's JSON, as a server would put it after ``data:``."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": choices, **extra})


def reply(*lines: str, delay: float = 0.0) -> Reply:
    """Return a reply that sends these lines verbatim, then ``[DONE]``."""
    return Reply(chunks=tuple(RecordedChunk(line, delay) for line in (*lines, "[DONE]")))


async def stream(model: OpenAIChatModel, tools: list[ToolSpec] | None = None) -> list[LLMItem]:
    """Stream one response."""
    offered = [WEATHER] if tools is None else tools
    return [item async for item in model.stream_with_tools([UserMessage(content="Hi")], offered)]


def end_of(items: list[LLMItem]) -> RoundEnd:
    """Return the response's end."""
    end = items[-1]
    assert isinstance(end, RoundEnd)
    return end


def thinking(items: list[LLMItem]) -> str:
    """Join the thinking of a response."""
    return "".join(i.text for i in items if isinstance(i, ThinkingDelta))


async def test_arguments_as_an_object_without_index_or_id(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """An object for arguments is serialised; fragments without index or id join the call."""
    llm_server.script(
        reply(
            chunk({"tool_calls": [{"function": {"name": "get_weather", "arguments": {}}}]}),
            chunk({"tool_calls": [{"function": {"arguments": '{"city": "Pa'}}]}),
            chunk({"tool_calls": [{"function": {"arguments": 'ris"}'}}]}, "tool_calls"),
            chunk({"tool_calls": [{"id": 17, "function": {"name": "get_weather"}}]}),
            chunk({"tool_calls": [{"function": {"arguments": {"city": "Rome"}}}]}, "tool_calls"),
        )
    )
    end = end_of(await stream(chat_model))
    assert [(c.name, json.loads(c.arguments)) for c in end.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert end.tool_calls[1].call_id == "17"


async def test_broken_arguments_are_repaired_and_cut_ones_are_not(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Single quotes, Python words, trailing commas, fences: repaired; a cut object stays."""
    calls = [
        ("a", "{'city': 'Paris', 'rain': True,}"),
        ("b", '```json\n{"city": "Oslo", "snow": None}\n```'),
        ("c", '{"city": "Eur'),
    ]
    llm_server.script(
        reply(
            *[
                chunk({"tool_calls": [{"index": n, "id": i, "function": {"arguments": a}}]})
                for n, (i, a) in enumerate(calls)
            ],
            chunk({}, "tool_calls"),
        )
    )
    end = end_of(await stream(chat_model))
    assert [c.arguments for c in end.tool_calls] == [
        '{"city": "Paris", "rain": true}',
        '{"city": "Oslo", "snow": null}',
        '{"city": "Eur',
    ]


async def test_content_as_parts_and_usage_in_odd_places(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Thinking parts in a content list are thinking; usage with nulls keeps only numbers."""
    thought = [{"type": "thinking", "thinking": [{"type": "text", "text": "Hmm."}]}]
    llm_server.script(
        reply(
            chunk({"content": thought}),
            chunk({"content": [{"type": "text", "text": "Yes."}]}, "stop"),
            chunk(None, usage={"prompt_tokens": 5, "completion_tokens": None}),
            chunk(None, x_groq={"usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
        )
    )
    items = await stream(chat_model)
    assert thinking(items) == "Hmm."
    assert [i for i in items if isinstance(i, str)] == ["Yes."]
    assert end_of(items).usage == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}


async def test_the_legacy_function_call_is_a_call(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """``delta.function_call`` (the old functions API) becomes a tool call."""
    legacy = {"function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    llm_server.script(reply(chunk(legacy), chunk({}, "function_call")))
    end = end_of(await stream(chat_model))
    assert [(c.name, c.arguments) for c in end.tool_calls] == [("get_weather", '{"city": "Paris"}')]
    assert end.finish_reason == "tool_calls"


async def test_a_call_cut_by_the_length_limit_is_not_complete(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """``length`` with a call: the call is reported cut, never complete."""
    call = {"index": 0, "id": "c1", "function": {"name": "get_weather", "arguments": '{"ci'}}
    llm_server.script(reply(chunk({"tool_calls": [call]}), chunk({}, "length")))
    end = end_of(await stream(chat_model))
    assert end.tool_calls == ()
    assert [c.name for c in end.cut_tool_calls] == ["get_weather"]
    assert end.error is not None
    assert "length limit" in str(end.error)


async def test_a_looping_answer_is_stopped_early_and_kept(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """The same sentence again and again: reading stops within a few repeats; no error."""
    sentence = "I can turn on the kitchen light for you. "
    lines = [chunk({"content": sentence[i : i + 5]}) for i in range(0, len(sentence), 5)] * 40
    llm_server.script(reply(*lines, chunk({}, "stop"), delay=0.001))
    items = await stream(chat_model)
    text = "".join(i for i in items if isinstance(i, str))
    end = end_of(items)
    assert text.startswith(sentence * 2)
    assert len(text) <= 3 * len(sentence)
    assert (end.finish_reason, end.error, end.tool_calls) == ("repetition", None, ())


async def test_looping_thinking_ends_the_round_with_an_error(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Reasoning that loops is stopped too; with nothing said, the round has failed."""
    lines = [chunk({"reasoning_content": "Wait, let me think again. "})] * 50
    llm_server.script(reply(*lines, chunk({"content": "Done."}, "stop")))
    items = await stream(chat_model)
    end = end_of(items)
    assert not [i for i in items if isinstance(i, str)]
    assert end.error is not None
    assert "repeated itself while thinking" in str(end.error)
    assert len(thinking(items)) < 200


async def test_secrets_in_thinking_never_leave_the_adapter(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Keys, tokens and logins split across chunks are scrubbed whole, in either field."""
    text = (
        "The key is sk-proj-Ab3dEf6hIj9kLm2n and the header Bearer eyJhbGciOiJI.eyJzdWIi.Sf1KxwRJ. "
        "The graph is at bolt://neo4j:hunter22@graph:7687 and the db postgres://app:pa55word@db/x.\n"
        "Done thinking."
    )
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    fields = ["reasoning_content", "reasoning"]
    lines = [chunk({fields[n % 2]: piece}) for n, piece in enumerate(pieces)]
    llm_server.script(reply(*lines, chunk({"content": "Ready."}, "stop")))
    shown = thinking(await stream(chat_model))
    for secret in ("sk-proj", "Ab3dEf6h", "eyJhbGci", "hunter22", "pa55word", "neo4j:", "app:"):
        assert secret not in shown
    assert "bolt://***@graph:7687" in shown
    assert shown.endswith("Done thinking.")


async def test_values_of_secret_arguments_are_masked_in_the_rounds_thinking(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """A tool marks ``digits`` secret: the call carries the mark, thinking never shows them."""
    call = {
        "index": 0,
        "id": "c1",
        "function": {"name": "alarm_disarm", "arguments": '{"digits": "4321"}'},
    }
    llm_server.script(
        reply(
            chunk({"reasoning_content": "They said 43"}),
            chunk({"reasoning_content": "21, so I disarm with 4321."}),
            chunk({"tool_calls": [call]}),
            chunk({}, "tool_calls"),
        )
    )
    items = await stream(chat_model, tools=[ALARM])
    assert "4321" not in thinking(items)
    assert thinking(items) == "They said ***, so I disarm with ***."
    [made] = end_of(items).tool_calls
    assert made.secret == frozenset({"digits"})
    assert json.loads(made.arguments)["digits"] == "4321"  # the tool itself gets the value
