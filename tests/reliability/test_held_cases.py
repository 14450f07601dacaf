"""The cases that already held when the product was attacked, kept under test together.

HTTP errors from the model server, bad tool arguments of every kind, an unknown tool, a
corrupt history file, a broken profile and a broken plugin: each gets a clear error or a
spoken line, never an exception, and nothing runs that should not.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel
from custom_components.companion_agent.engine.llm.adapter import MODEL_RETRY
from custom_components.companion_agent.engine.plugins import load_library
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.lines import ENGLISH
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.turns import Conversations, persona, run

SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"level": {"type": "integer", "minimum": 0, "maximum": 100}},
    "required": ["level"],
}


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


@pytest.mark.parametrize("status", [500, 502])
async def test_model_server_errors_become_a_spoken_line(
    llm_server: LLMServer, talk: Conversations, status: int
) -> None:
    """The adapter tries again before the first token; then the person hears the plain line."""
    model = OpenAIChatModel(
        LLMSettings(
            base_url=llm_server.url,
            model="m",
            retry=replace(MODEL_RETRY, attempts=2, first_delay=0.0),
        )
    )
    llm_server.script(Reply.error(status), Reply.error(status))
    done = await run(TurnRunner(), persona(model), talk.request("Hello?"))
    await model.aclose()
    assert (done.result.outcome, done.text) == ("failed", ENGLISH.unreachable)
    assert len(llm_server.requests) == 2


@pytest.mark.parametrize("status", [429, 503])
async def test_a_server_busy_past_its_wait_becomes_the_slow_line(
    llm_server: LLMServer, talk: Conversations, status: int
) -> None:
    """429/503 mean busy: asked again within the busy wait, then the "slow" line."""
    model = OpenAIChatModel(
        LLMSettings(
            base_url=llm_server.url,
            model="m",
            first_token_timeout=0.5,
            busy_timeout=1.5,
            retry=replace(MODEL_RETRY, attempts=2, first_delay=0.0),
        )
    )
    llm_server.script(*(Reply.error(status) for _ in range(20)))
    done = await run(TurnRunner(), persona(model), talk.request("Hello?"))
    await model.aclose()
    assert (done.result.outcome, done.text) == ("failed", ENGLISH.slow)
    assert len(llm_server.requests) > 2


@pytest.mark.parametrize(
    "arguments",
    ['{"level": 5', '["level"]', '{"level": "high"}', '{"level": 500}', '{"level": 5, "x": 1}'],
    ids=["cut-json", "not-an-object", "wrong-type", "out-of-range", "unknown-field"],
)
async def test_bad_tool_arguments_never_reach_the_tool(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations, arguments: str
) -> None:
    """Every kind of bad argument is refused before the tool, and the model is told why."""
    ran: list[JSONObject] = []

    async def dim(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Record the call."""
        ran.append(args)
        return "dimmed"

    tool = Tool(spec=ToolSpec(name="dim", description="Dim", parameters=SCHEMA), handler=dim)
    llm_server.script(Reply.tool_calls(("call_1", "dim", arguments)), Reply.text("Sorry."))
    done = await run(TurnRunner(), persona(chat_model), talk.request("Dim", tools=[tool]))
    assert ran == []
    assert done.result.outcome == "complete"
    told = json.loads(str(llm_server.requests[1]["messages"][-1]["content"]))  # type: ignore[index]
    assert (told["error"], told["retryable"]) == ("validation", False)


async def test_an_unknown_tool_is_refused_with_the_tools_there_are(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A made-up tool name runs nothing; the model hears which tools exist."""
    llm_server.script(Reply.tool_calls(("call_1", "open_pod_bay", "{}")), Reply.text("No."))
    done = await run(TurnRunner(), persona(chat_model), talk.request("Open"))
    assert done.text == "No."
    told = str(llm_server.requests[1]["messages"][-1]["content"])  # type: ignore[index]
    assert "unknown tool 'open_pod_bay'" in told


async def test_a_corrupt_history_file_starts_the_conversation_again(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A damaged exchange store on disk: set aside, and the turn answers from an empty history."""
    talk.folder.mkdir(parents=True)
    (talk.folder / "exchanges.db").write_text('{"version": 2, "turns": [')
    done = await run(TurnRunner(), persona(chat_model), talk.request("Hi"))
    assert done.result.outcome == "complete"
    assert len(list(talk.folder.glob("exchanges.db.corrupt-*"))) == 1
    assert [turn.user for turn in await talk.turns()] == ["Hi"]


def test_a_broken_profile_and_a_broken_plugin_are_problems_not_failures(tmp_path: Path) -> None:
    """Each names its file and key; the good ones still load."""
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "good.toml").write_text('id = "good"\n')
    (tmp_path / "profiles" / "bad.toml").write_text("max_rounds = 0\n")
    plugin = tmp_path / "plugins" / "broken"
    plugin.mkdir(parents=True)
    (plugin / "plugin.toml").write_text('[plugin]\nid = "broken"\ntype = "tool"\nentry = "x:Y"\n')
    library = load_library([tmp_path])
    assert library.profiles.get("good") is not None
    found = {(p.path.name, p.key) for p in library.problems}
    assert ("bad.toml", "max_rounds") in found
    assert ("plugin.toml", "plugin.entry") in found
