"""What a small local model gets wrong, through whole turns: calls as text, loops, secrets.

The real SDK against the scripted server, the real guard with its audit file, a real
exchange store. A call written as text runs through the same guard as any call; its
text is never shown or spoken; arguments a contract marks secret reach the tool and
nothing else; thinking is shown (scrubbed) and never spoken.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.audit import AuditLog, read_audit
from custom_components.companion_agent.engine.events import (
    SentenceOutput,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
)
from custom_components.companion_agent.engine.guard.confirmations import Confirmations
from custom_components.companion_agent.engine.guard.executor import Guard
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.llm_script import ReasoningChunk, Refusal, Reply, TextChunk
from tests.support.llm_server import LLMServer
from tests.support.tool_specs import ALARM, WEATHER
from tests.support.turns import Conversations, persona, run

CODE = "739182"
"""Six digits: no port of the local server (five digits at most) can hold it in a log line."""


class House:
    """Tools that record what ran."""

    def __init__(self) -> None:
        """Nothing ran yet."""
        self.ran: list[tuple[str, JSONObject]] = []

    def tool(self, spec: ToolSpec, result: JSONValue, *, confirm: bool = False) -> Tool:
        """Return a tool that records its arguments and returns ``result``."""

        async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
            """Record the call."""
            self.ran.append((spec.name, args))
            return result

        return Tool(spec=spec, handler=handler, policy="confirm" if confirm else "allow")


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


@pytest.fixture
async def audit(tmp_path: Path) -> AuditLog:
    """Return a real audit file."""
    return AuditLog(tmp_path / "audit.jsonl", batch_delay=0)


def guarded(audit: AuditLog) -> TurnRunner:
    """Return a runner whose guard writes the audit file."""
    return TurnRunner(Guard(confirmations=Confirmations(audit=audit), audit=audit))


def spoken(sentences: list[SentenceOutput]) -> str:
    """Join what was handed to speech."""
    return "".join(s.tts_text for s in sentences)


async def test_a_call_written_as_text_runs_through_the_guard_and_is_never_said(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations, audit: AuditLog
) -> None:
    """Ollama's small model writes the call: it runs once, audited; only the answer is said."""
    house = House()
    llm_server.script(Reply.recorded("ollama_tool_call_as_text"), Reply.text("It is sunny."))
    tools = [house.tool(WEATHER, {"sky": "sunny"})]
    done = await run(guarded(audit), persona(chat_model), talk.request("Weather?", tools=tools))
    await audit.close()
    assert house.ran == [("get_weather", {"city": "Paris"})]
    assert done.text == "It is sunny."
    assert spoken(done.sentences) == "It is sunny."
    [event] = done.result.tool_calls
    assert (event.tool_name, event.status, event.args) == (
        "get_weather",
        "completed",
        {"city": "Paris"},
    )
    assert [(r["tool"], r["decision"]) for r in read_audit(audit.path)] == [
        ("get_weather", "allow")
    ]
    sent = llm_server.requests[1]["messages"]
    assert isinstance(sent, list)
    assert [m["role"] for m in sent[-2:]] == ["assistant", "tool"]


async def test_a_written_call_to_a_risky_tool_waits_for_the_person(
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
    talk: Conversations,
    audit: AuditLog,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``<tool_call>`` text for a confirm tool: held, not run; its secret digits show nowhere.

    ``digits`` is secret only because the contract says so (``x-secret``), not by its name.

    Not in the items (thinking, text, events), the exchange store, the audit file or
    the log at any level; the person's yes runs the tool with the real code.
    """
    house = House()
    call = json.dumps({"name": "alarm_disarm", "arguments": {"digits": CODE}})
    llm_server.script(
        Reply(
            chunks=(
                ReasoningChunk(f"The code is {CODE[:2]}"),
                ReasoningChunk(f"{CODE[2:]}. I will disarm with {CODE}."),
                TextChunk("<tool_"),
                TextChunk(f"call>\n{call}\n</tool_call>"),
            )
        ),
        Reply.text("Shall I disarm the alarm?"),
    )
    tools = [house.tool(ALARM, "disarmed", confirm=True)]
    runner = guarded(audit)
    with caplog.at_level(logging.DEBUG):
        done = await run(runner, persona(chat_model), talk.request("Disarm it", tools=tools))
        [token] = runner.guard.confirmations.pending_for("conv-1")
        result = await runner.guard.confirmations.resolve(
            token.token_id, approve=True, user_id="alice"
        )
        await audit.close()
    assert house.ran == [("alarm_disarm", {"digits": CODE})]
    assert result.status == "executed"
    assert done.text == "Shall I disarm the alarm?"
    [event] = [i for i in done.items if isinstance(i, ToolCallEvent) and i.status != "running"]
    assert (event.status, event.args) == ("pending_confirmation", {"digits": "***"})
    thinking = "".join(i.text for i in done.items if isinstance(i, ThinkingDelta))
    assert thinking == "The code is ***. I will disarm with ***."
    assert CODE not in repr(done.items)
    assert CODE not in audit.path.read_text()
    with closing(sqlite3.connect(talk.folder / "exchanges.db")) as db:
        stored = [str(row[0]) for row in db.execute("SELECT turn FROM exchanges")]
    db.close()
    assert stored
    assert all(CODE not in turn for turn in stored)
    assert CODE not in json.dumps(llm_server.requests[1])
    assert not [r for r in caplog.records if CODE in r.getMessage()]
    assert [r["decision"] for r in read_audit(audit.path)] == ["confirm", "approved"]


async def test_thinking_is_shown_and_never_spoken(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Sentences in a reasoning field and in ``<think>``: thinking only, never speech."""
    llm_server.script(
        Reply(
            chunks=(
                ReasoningChunk("I should greet them. Keep it short.", field="reasoning"),
                TextChunk("<think>They sound tired. Be gentle.</th"),
                TextChunk("ink>Good evening. Rest well."),
            )
        )
    )
    done = await run(TurnRunner(), persona(chat_model), talk.request("Hello"))
    thinking = "".join(i.text for i in done.items if isinstance(i, ThinkingDelta))
    assert thinking == "I should greet them. Keep it short.They sound tired. Be gentle."
    assert done.text == "Good evening. Rest well."
    assert spoken(done.sentences) == "Good evening.Rest well."
    assert done.result.spoken == "Good evening. Rest well."
    assert "greet" not in done.result.text


async def test_a_looping_reply_is_stopped_and_the_turn_is_complete(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """The same sentence over and over: stopped within four copies, no apology, complete."""
    sentence = "The lights are on in every room. "
    llm_server.script(Reply.text(sentence * 60, chunk_size=6))
    done = await run(TurnRunner(), persona(chat_model), talk.request("Lights?"))
    assert done.result.outcome == "complete"
    assert done.text.startswith(sentence * 2)
    assert len(done.text) <= 4 * len(sentence)
    assert "Sorry" not in done.text
    assert llm_server.aborted <= 1


async def test_text_around_a_written_call_is_said_and_the_call_is_not(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """``Sure. <tool_call>…</tool_call>``: "Sure." is said, the block never reaches speech."""
    house = House()
    block = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    llm_server.script(Reply.text(f"Sure, one moment. {block}", chunk_size=5), Reply.text("Cold."))
    tools = [house.tool(WEATHER, {"sky": "snow"})]
    done = await run(TurnRunner(), persona(chat_model), talk.request("Oslo?", tools=tools))
    assert house.ran == [("get_weather", {"city": "Oslo"})]
    shown = "".join(i.text for i in done.items if isinstance(i, TextDelta))
    assert "tool_call" not in shown
    assert "Oslo" not in shown
    assert spoken(done.sentences).replace(" ", "") == "Sure,onemoment.Cold."


async def test_without_tools_a_written_call_still_runs_and_history_is_plain_text(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A server that refuses tools: the call the model writes runs; the next request carries
    the call and its result as text, for a template that knows no tool messages."""
    house = House()
    llm_server.refuse(Refusal.recorded("ollama_refuses_tools"))
    llm_server.script(Reply.recorded("ollama_tool_call_as_text"), Reply.text("It is sunny."))
    tools = [house.tool(WEATHER, {"sky": "sunny"})]
    done = await run(TurnRunner(), persona(chat_model), talk.request("Weather?", tools=tools))
    assert house.ran == [("get_weather", {"city": "Paris"})]
    assert done.text == "It is sunny."
    sent = llm_server.requests[-1]["messages"]
    assert isinstance(sent, list)
    assert [m["role"] for m in sent[-3:]] == ["user", "assistant", "user"]
    assert sent[-2]["content"] == '[called get_weather with {"city": "Paris"}]'
    assert sent[-1]["content"] == '[result of get_weather: {"sky": "sunny"}]'
    assert all("tools" not in body for body in llm_server.requests)
