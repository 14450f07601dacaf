"""A turn the home begins: its instruction is framed as the home's, stored and shown as such.

Runs through the real openai SDK against the local streaming server, with a real exchange
store (one SQLite file).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.turn.prompt import PROACTIVE_OPENING
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.turns import Conversations, finish, persona, run, start


def user_messages(server: LLMServer, request: int) -> list[str]:
    """Return the user messages of one request the model server received."""
    messages = server.requests[request]["messages"]
    assert isinstance(messages, list)
    return [str(m["content"]) for m in messages if m["role"] == "user"]


async def test_the_instruction_reaches_the_model_as_the_homes_and_is_stored_as_proactive(
    tmp_path: Path, llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """Framed in this turn and the next; the file says who began it; the person's turn is not."""
    talk = Conversations(tmp_path)
    runner = TurnRunner()
    who = persona(chat_model)
    llm_server.script(Reply.text("Good morning! Sleep well?"), Reply.text("Glad to hear it."))
    proactive = replace(talk.request("Greet them; ask how they slept."), initiator="proactive")

    first = await run(runner, who, proactive)
    second = await run(runner, who, talk.request("Very well, thanks."))

    assert first.result.text == "Good morning! Sleep well?"
    assert second.result.outcome == "complete"
    (asked,) = user_messages(llm_server, 0)
    assert asked == f"{PROACTIVE_OPENING}\nGreet them; ask how they slept."
    history = user_messages(llm_server, 1)
    assert history == [asked, "Very well, thanks."]
    turns = await talk.turns()
    assert [turn.initiator for turn in turns] == ["proactive", "person"]
    assert turns[0].user == "Greet them; ask how they slept."


async def test_a_turn_cancelled_before_its_task_ran_is_still_stored_and_ends(
    tmp_path: Path, llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """cancel() right after start(): the result comes (interrupted), no model call is made."""
    talk = Conversations(tmp_path)
    turn = start(TurnRunner(), persona(chat_model), talk.request("Hello?"))
    turn.cancel("the device could not play it")

    finished = await finish(turn)

    assert finished.result.outcome == "interrupted"
    assert finished.result.reason == "the device could not play it"
    assert llm_server.requests == []
    assert [m.role for m in await talk.history("conv-1").load()] == ["user", "assistant"]
