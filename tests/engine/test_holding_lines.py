"""A slow tool round says one holding line: spoken, shown and stored as heard, never to the model.

Each turn runs through the real openai SDK against the local streaming server, with real
tools that take real time, and is stored in a real exchange store. A slow tool waits until
its line has come out (so the round is slow for certain); a round that must stay silent
runs well past the line's time.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest

from custom_components.companion_agent.engine.events import (
    OutputItem,
    SentenceOutput,
    TextDelta,
    ToolCallEvent,
)
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.messages import (
    AssistantMessage,
    ChatMessage,
    SystemMessage,
    UserMessage,
)
from custom_components.companion_agent.engine.pipeline import join_speech
from custom_components.companion_agent.engine.plugins import Profile
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.holding import (
    HoldingHint,
    HoldingLines,
    HoldingPhrases,
    from_arguments,
    language_chain,
)
from custom_components.companion_agent.engine.tools.registry import Tool, ToolRegistry
from custom_components.companion_agent.engine.turn.loop import (
    LoopItem,
    ToolLoop,
    TurnRecord,
    closes_sentence,
)
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.lines import ENGLISH
from tests.support.llm_script import Reply, TextChunk, ToolCallChunk
from tests.support.llm_server import LLMServer
from tests.support.turns import PROFILE, Ask, Conversations, Finished, persona, start

AFTER = 0.2
"""The line's time in these tests: short, so a test that must stay silent is short too."""
SILENT_ROUND = 1.0
"""How long a round that must say nothing runs: five times the line's time."""
PHRASES = HoldingPhrases(
    after=AFTER,
    languages=MappingProxyType(
        {
            "en": MappingProxyType(
                {
                    "camera": "One moment, I'm looking at the {target}.",
                    "camera_any": "One moment, I'm looking at the camera.",
                    "search": "One moment, I'm looking that up.",
                    "default": "One moment, please.",
                }
            ),
            "zh": MappingProxyType(
                {
                    "camera": "稍等，我看一下{target}。",
                    "camera_any": "稍等，我看一下摄像头。",
                    "default": "请稍等。",
                }
            ),
        }
    ),
)
HOLDING_PROFILE = replace(PROFILE, holding=PHRASES)
CAMERA_LINE = "One moment, I'm looking at the front-door camera."
CAMERA_CALL = ("call_1", "camera", '{"name": "front-door camera"}')


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


class SlowTools:
    """Tools that run until a holding line is spoken (or ``longest`` seconds)."""

    def __init__(self, longest: float = 5.0) -> None:
        """Start with no line spoken."""
        self.longest = longest
        self._spoken = asyncio.Event()

    def line_spoken(self) -> None:
        """Let every tool waiting for a line end."""
        self._spoken.set()
        self._spoken = asyncio.Event()

    def tool(
        self, name: str, hint: HoldingHint | None, *, quick: bool = False, steady: bool = False
    ) -> Tool:
        """Return a tool that ends once a line is spoken (at once if ``quick``).

        A ``steady`` one pays no attention to lines: it runs ``longest`` seconds.
        """

        async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
            """Wait for the next line, or ``longest`` seconds; then answer."""
            if steady:
                await asyncio.sleep(self.longest)
            elif not quick:
                try:
                    await asyncio.wait_for(self._spoken.wait(), self.longest)
                except TimeoutError:
                    return {"status": "done without a line"}
            return {"status": "done"}

        parameters: JSONObject = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "question": {"type": "string"}},
        }
        spec = ToolSpec(name=name, description=name, parameters=parameters)
        return Tool(spec=spec, handler=handler, holding=hint)

    def camera(self, *, quick: bool = False) -> Tool:
        """Return the camera tool: its target is the camera it is asked to look at."""
        hint = HoldingHint(kind="camera", target=from_arguments("name"))
        return self.tool("camera", hint, quick=quick)


async def take_turn(
    slow: SlowTools, chat_model: OpenAIChatModel, ask: Ask, *, profile: Profile = HOLDING_PROFILE
) -> Finished:
    """Run a turn to its end, ending each slow tool once a holding line has been spoken."""
    turn = start(TurnRunner(), persona(chat_model, profile=profile), ask)
    items: list[OutputItem] = []
    running = 0
    async for item in turn.items():
        items.append(item)
        match item:
            case ToolCallEvent(status="running"):
                running += 1
            case ToolCallEvent():
                running -= 1
            case SentenceOutput() if running:
                slow.line_spoken()  # said while its calls run: a holding line
    return Finished(items=tuple(items), result=await turn.result)


def spoken_while_tools_ran(finished: Finished) -> list[str]:
    """Return, for each round of calls that spoke, the speech of the sentences said meanwhile."""
    rounds: list[list[SentenceOutput]] = []
    running = 0
    for item in finished.items:
        match item:
            case ToolCallEvent(status="running"):
                if not running:
                    rounds.append([])
                running += 1
            case ToolCallEvent():
                running -= 1
            case SentenceOutput() if running:
                rounds[-1].append(item)
    return [join_speech(sentences) for sentences in rounds if sentences]


async def stored_text(talk: Conversations) -> str:
    """Return what the conversation's one stored turn says the companion said."""
    (turn,) = await talk.turns()
    return "".join(m.content for m in turn.messages if isinstance(m, AssistantMessage))


async def test_a_slow_tool_says_one_line_spoken_shown_and_stored_but_not_to_the_model(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    slow = SlowTools()
    llm_server.script(Reply.tool_calls(CAMERA_CALL), Reply.text("There is a parcel."))
    finished = await take_turn(slow, chat_model, talk.request("Door?", tools=[slow.camera()]))

    assert spoken_while_tools_ran(finished) == [CAMERA_LINE]  # before the call completed
    assert all(s.tts_text for s in finished.sentences)
    assert finished.sentences[-1].tts_text == "There is a parcel."  # a sentence of its own
    assert "I'm looking at the front-door camera." in finished.text
    result = finished.result
    assert result.outcome == "complete"
    assert result.shown == f"{CAMERA_LINE}\nThere is a parcel."
    assert result.spoken.startswith("One moment,")
    assert result.text == "There is a parcel."  # what the model wrote
    assert await stored_text(talk) == f"{CAMERA_LINE}\nThere is a parcel."
    (turn,) = await talk.turns()
    first = turn.messages[0]
    assert isinstance(first, AssistantMessage)
    assert first.content == f"{CAMERA_LINE}\n"  # with the calls it was said during
    assert [call.name for call in first.tool_calls] == ["camera"]
    assert "One moment" not in json.dumps(llm_server.requests[1]["messages"])


async def test_a_later_turn_s_model_is_not_shown_the_lines_either(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Stored as heard, left out of the history the next turn's model reads (it would copy)."""
    slow = SlowTools()
    llm_server.script(
        Reply(status=503), Reply.tool_calls(CAMERA_CALL), Reply.text("There is a parcel.")
    )
    await take_turn(slow, chat_model, talk.request("Door?", tools=[slow.camera()]))
    assert await stored_text(talk) == f"One moment, please.\n{CAMERA_LINE}\nThere is a parcel."
    (stored,) = await talk.turns()
    assert stored.lines == ("One moment, please.", CAMERA_LINE)

    llm_server.script(Reply.text("You are welcome."))
    await take_turn(slow, chat_model, talk.request("Thanks."))
    shown = json.dumps(llm_server.requests[-1]["messages"], ensure_ascii=False)
    assert "There is a parcel." in shown
    assert "One moment" not in shown


async def test_a_quick_tool_says_nothing(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    slow = SlowTools()
    llm_server.script(Reply.tool_calls(CAMERA_CALL), Reply.text("There is a parcel."))
    profile = replace(PROFILE, holding=replace(PHRASES, after=1.5))
    ask = talk.request("Door?", tools=[slow.camera(quick=True)])
    finished = await take_turn(slow, chat_model, ask, profile=profile)

    assert spoken_while_tools_ran(finished) == []
    assert finished.result.shown == "There is a parcel."
    assert await stored_text(talk) == "There is a parcel."


async def test_a_long_round_says_one_line_only(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    slow = SlowTools(longest=SILENT_ROUND)
    llm_server.script(Reply.tool_calls(CAMERA_CALL), Reply.text("There is a parcel."))
    hint = HoldingHint(kind="camera", target=from_arguments("name"))
    ask = talk.request("Door?", tools=[slow.tool("camera", hint, steady=True)])
    finished = await take_turn(slow, chat_model, ask)

    assert spoken_while_tools_ran(finished) == [CAMERA_LINE]  # five times its time: once
    assert await stored_text(talk) == f"{CAMERA_LINE}\nThere is a parcel."


async def test_two_slow_rounds_say_one_line_each(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    slow = SlowTools()
    search = slow.tool("web_search", HoldingHint(kind="search"))
    llm_server.script(
        Reply.tool_calls(CAMERA_CALL, ("call_2", "camera", '{"name": "garden"}')),
        Reply.tool_calls(("call_3", "web_search", '{"question": "parcel"}')),
        Reply.text("It is the new kettle."),
    )
    finished = await take_turn(
        slow, chat_model, talk.request("Door?", tools=[slow.camera(), search])
    )

    search_line = "One moment, I'm looking that up."
    assert spoken_while_tools_ran(finished) == [CAMERA_LINE, search_line]  # the first call decides
    expected = f"{CAMERA_LINE}\n{search_line}\nIt is the new kettle."
    assert finished.result.shown == expected
    assert await stored_text(talk) == expected
    assert "One moment" not in json.dumps(llm_server.requests[2]["messages"])


async def test_the_same_line_is_not_said_twice_in_a_turn(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    slow = SlowTools(longest=SILENT_ROUND)
    llm_server.script(
        Reply.tool_calls(("call_1", "camera", '{"question": "who?"}')),
        Reply.tool_calls(("call_2", "camera", '{"question": "still there?"}')),
        Reply.tool_calls(("call_3", "camera", '{"question": "and now?"}')),
        Reply.text("Nobody."),
    )
    finished = await take_turn(slow, chat_model, talk.request("Door?", tools=[slow.camera()]))

    assert spoken_while_tools_ran(finished) == [
        "One moment, I'm looking at the camera.",
        "One moment, please.",
    ]  # the third round had nothing left to say, and ran for a second in silence


async def test_a_busy_model_server_says_the_plain_line_before_its_answer(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """503 (busy), then the answer: "One moment, please." at once, shown, spoken, stored first."""
    slow = SlowTools()
    llm_server.script(Reply(status=503), Reply.text("Hello there."))
    finished = await take_turn(slow, chat_model, talk.request("Hi"))

    expected = "One moment, please.\nHello there."
    assert finished.result.outcome == "complete"
    assert finished.result.shown == expected
    assert finished.result.spoken.startswith("One moment, please.")
    assert finished.sentences[-1].tts_text == "Hello there."  # a sentence of its own
    assert finished.result.text == "Hello there."  # what the model wrote
    assert await stored_text(talk) == expected


async def test_a_busy_server_after_a_slow_tool_is_told_once_and_never_to_the_model(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """The tool's line, then a busy server in the next round: its plain line, in order."""
    slow = SlowTools()
    llm_server.script(
        Reply.tool_calls(CAMERA_CALL),
        Reply(status=503),
        Reply.tool_calls(("call_2", "camera", '{"name": "garden"}')),
        Reply(status=429),
        Reply.text("There is a parcel."),
    )
    finished = await take_turn(slow, chat_model, talk.request("Door?", tools=[slow.camera()]))

    garden = "One moment, I'm looking at the garden."
    expected = f"{CAMERA_LINE}\nOne moment, please.\n{garden}\nThere is a parcel."
    assert finished.result.shown == expected  # the second busy answer: nothing left to say
    assert await stored_text(talk) == expected
    (turn,) = await talk.turns()
    contents = [m.content for m in turn.messages if isinstance(m, AssistantMessage)]
    assert contents == [
        f"{CAMERA_LINE}\n",
        f"One moment, please.\n{garden}\n",
        "There is a parcel.",
    ]
    assert "One moment" not in json.dumps(llm_server.requests[-1]["messages"])


@pytest.mark.parametrize(
    ("before", "line"),
    [
        ("Let me check the", None),
        ("Let me check, ", None),
        ("Let me check.", f"\n{CAMERA_LINE}\n"),
        ('I will look. "Right away!" ', f"\n{CAMERA_LINE}\n"),
        ("Let me check:\n", f"{CAMERA_LINE}\n"),
    ],
)
async def test_a_line_never_cuts_into_a_sentence(
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
    talk: Conversations,
    before: str,
    line: str | None,
) -> None:
    slow = SlowTools(longest=SILENT_ROUND)
    call = ToolCallChunk(0, CAMERA_CALL[2], id=CAMERA_CALL[0], name=CAMERA_CALL[1])
    llm_server.script(
        Reply(chunks=(TextChunk(before), call), finish_reason="tool_calls"),
        Reply.text("There is a parcel."),
    )
    finished = await take_turn(slow, chat_model, talk.request("Door?", tools=[slow.camera()]))

    assert spoken_while_tools_ran(finished) == ([] if line is None else [CAMERA_LINE])
    assert finished.result.shown == f"{before}{line or ''}There is a parcel."
    assert finished.sentences[-1].tts_text == "There is a parcel."  # a sentence of its own
    assert await stored_text(talk) == f"{before}{line or ''}There is a parcel."


async def test_the_line_is_in_the_turns_language(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    slow = SlowTools()
    llm_server.script(
        Reply.tool_calls(("call_1", "camera", '{"name": "门口的摄像头"}')),
        Reply.text("门口有一个包裹。"),
    )
    ask = talk.request("门口？", tools=[slow.camera()])
    ask = replace(ask, context=replace(ask.context, language="zh-CN"))
    finished = await take_turn(slow, chat_model, ask)

    assert spoken_while_tools_ran(finished) == ["稍等，我看一下门口的摄像头。"]
    assert finished.result.shown == "稍等，我看一下门口的摄像头。\n门口有一个包裹。"


async def test_a_turn_cancelled_while_the_tool_runs_says_no_line(
    llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    slow = SlowTools(longest=SILENT_ROUND)
    registry = ToolRegistry([slow.camera()])
    lines = HoldingLines(
        phrases=PHRASES, languages=language_chain("en"), hints=registry.holding_hints()
    )
    core = ToolLoop(chat_model, registry, ENGLISH, holding=lines)
    llm_server.script(Reply.tool_calls(CAMERA_CALL), Reply.text("There is a parcel."))
    record = TurnRecord()
    items: list[LoopItem] = []
    running = asyncio.Event()

    async def consume() -> None:
        """Take the loop's items; note when the call runs."""
        messages: list[ChatMessage] = [
            SystemMessage(content="You are a test."),
            UserMessage(content="Door?"),
        ]
        ctx = ToolContext(conversation_id="conv-1", language="en")
        async for item in core.run_turn(messages, ctx, record):
            items.append(item)
            if isinstance(item, ToolCallEvent) and item.status == "running":
                running.set()

    task = asyncio.create_task(consume())
    async with asyncio.timeout(5):
        await running.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(AFTER * 3)  # the line's time has long passed

    assert [item for item in items if isinstance(item, TextDelta)] == []
    assert record.held == []
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize(
    ("text", "closes"),
    [
        ("", True),
        ("Sure.", True),
        ("Sure!  ", True),
        ("Really?", True),
        ("好的。", True),
        ("好的！", True),
        ("Hmm…", True),
        ('He said "wait."', True),
        ("(I'll look.)", True),
        ("**Done.**", True),
        ("Let me see:\n", True),
        ("Let me see\n  ", True),
        ("Let me see", False),
        ("Let me see,", False),
        ("好的，", False),
        ("[think]", False),
    ],
)
def test_text_closes_a_sentence_at_an_end_mark_or_a_line_break(text: str, closes: bool) -> None:
    """Empty text, a line break, or a terminator before closing quotes and emphasis close one."""
    assert closes_sentence(text) is closes
