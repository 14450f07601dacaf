"""Truthful and brief whatever the model says: claims corrected, repeats and long replies cut.

Whole turns through the real openai SDK against the local streaming server, stored in a
real exchange store; the phrase tables and the repeat measure on their own below.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.events import TextDelta, ToolCallEvent
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.llm.repetition import SentenceRepeats
from custom_components.companion_agent.engine.messages import AssistantMessage
from custom_components.companion_agent.engine.pipeline import join_speech
from custom_components.companion_agent.engine.plugins.profiles import OutputFormat
from custom_components.companion_agent.engine.speech.audio_length import spoken_seconds
from custom_components.companion_agent.engine.tools.claims import ChangeClaims
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.turns import PROFILE, Conversations, Finished, persona, run

CORRECTION = "I haven't changed anything yet."
RAMBLE = (
    "The kitchen light is turned on. You can turn on the light again. "
    "You can turn on the light again now. You can turn on the lights again. "
    "You can turn on the light again. You can turn on the light once more. " * 3
)


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


def light_tool(*, read_only: bool, log: list[str]) -> Tool:
    """Return a tool that turns the light on, or (read only) tells its state."""
    name = "get_state" if read_only else "turn_on"

    async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Log the call and answer."""
        log.append(name)
        return {"state": "on"}

    spec = ToolSpec(name=name, description="The kitchen light")
    return Tool(spec=spec, handler=handler, read_only=read_only)


def spoken(turn: Finished) -> list[str]:
    """Return the sentences the turn gave speech."""
    return [s.tts_text for s in turn.sentences if s.tts_text]


async def stored_reply(talk: Conversations) -> str:
    """Return the assistant text of the one stored turn."""
    (stored,) = await talk.turns()
    return "".join(m.content for m in stored.messages if isinstance(m, AssistantMessage))


async def test_the_issues_ramble_is_corrected_and_cut_where_it_repeats(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """No call, "The kitchen light is turned on." then near-identical sentences: the person
    hears the correction and at most the bound; the turn is marked cut and the claim counted."""
    llm_server.script(Reply.text(RAMBLE, chunk_size=7))
    runner = TurnRunner()
    turn = await run(runner, persona(chat_model), talk.request("Turn on the kitchen light"))
    said = spoken(turn)
    assert said[0] == CORRECTION
    assert said == [
        CORRECTION,
        "You can turn on the light again.",
        "You can turn on the light again now.",
    ]
    assert turn.result.speech_cut == "repeated"
    assert turn.result.corrected == 1
    assert turn.text.startswith(f"{CORRECTION} You can turn on the light again.")
    assert "turned on" not in turn.text
    assert len(turn.text) < len(RAMBLE) / 2  # the model was no longer read
    assert turn.result.spoken == join_speech(s for s in turn.sentences if s.tts_text)
    stored = await stored_reply(talk)
    assert stored.startswith(CORRECTION)
    assert "turned on" not in stored
    assert runner.usage.conversation("conv-1").corrected_claims == 1
    assert runner.usage.conversation("conv-1").speech_cut == 1


async def test_a_long_reply_is_shown_whole_and_spoken_to_its_bound(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Seven different sentences: four are spoken, all seven shown and stored, marked long."""
    sentences = [
        "Tomato soup is easy.",
        "Chop two onions finely.",
        "Fry them in butter until soft.",
        "Add a tin of tomatoes and some stock.",
        "Simmer it for twenty minutes.",
        "Blend it smooth.",
        "Season with salt and pepper.",
    ]
    text = " ".join(sentences)
    llm_server.script(Reply.text(text))
    turn = await run(TurnRunner(), persona(chat_model), talk.request("Soup?"))
    assert spoken(turn) == sentences[:4]
    assert turn.text == text
    assert await stored_reply(talk) == text
    assert turn.result.speech_cut == "long"
    assert (await talk.turns())[0].speech_cut == "long"


async def test_the_bound_in_seconds_comes_first_for_long_sentences(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A persona's ``spoken_seconds``: sentences are spoken while the estimate stays within."""
    sentences = [
        "Good morning to you, the weather today looks bright and mild.",
        "There is a small chance of rain in the late afternoon hours.",
        "Your first meeting starts at half past nine in the small office.",
        "Remember to take the recycling out before the truck comes by.",
    ]
    llm_server.script(Reply.text(" ".join(sentences)))
    output = OutputFormat(spoken_seconds=10.0, spoken_sentences=4)
    who = persona(chat_model, profile=replace(PROFILE, output=output))
    turn = await run(TurnRunner(), who, talk.request("Morning"))
    said = spoken(turn)
    assert all(3.5 < spoken_seconds(s) < 5 for s in sentences)
    assert " ".join(said) == " ".join(sentences[:2])
    assert sum(spoken_seconds(s) for s in said) <= 10.0
    assert turn.result.speech_cut == "long"


async def test_a_state_answer_after_a_look_is_no_claim(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Asked about the light, the model looks (a read-only call) and reports: nothing changes."""
    log: list[str] = []
    llm_server.script(
        Reply.tool_calls(("c1", "get_state", "{}")),
        Reply.text("The light is on. It has been turned on since seven."),
    )
    ask = talk.request("Is the light on?", tools=[light_tool(read_only=True, log=log)])
    turn = await run(TurnRunner(), persona(chat_model), ask)
    assert spoken(turn) == ["The light is on.", "It has been turned on since seven."]
    assert turn.result.corrected == 0
    assert turn.result.speech_cut is None


async def test_a_claim_after_a_real_change_stands(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """A call that changed the light: "I've turned on the kitchen light." is the truth."""
    log: list[str] = []
    llm_server.script(
        Reply.tool_calls(("c1", "turn_on", "{}")),
        Reply.text("I've turned on the kitchen light."),
    )
    ask = talk.request("Light on", tools=[light_tool(read_only=False, log=log)])
    turn = await run(TurnRunner(), persona(chat_model), ask)
    assert log == ["turn_on"]
    assert spoken(turn) == ["I've turned on the kitchen light."]
    assert turn.result.corrected == 0
    assert any(isinstance(i, ToolCallEvent) and i.status == "completed" for i in turn.items)


async def test_a_chinese_claim_is_corrected_in_chinese_and_shown_corrected(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """ "已为您打开客厅灯。" with no call: the display, speech and store all hold the correction."""
    llm_server.script(Reply.text("好的！已为您打开客厅灯。还有别的吗？"))
    turn = await run(TurnRunner(), persona(chat_model), talk.request("打开客厅灯"))
    assert spoken(turn) == ["好的！", "我还没有做任何更改。", "还有别的吗？"]
    shown = "".join(i.text for i in turn.items if isinstance(i, TextDelta))
    assert shown == "好的！我还没有做任何更改。还有别的吗？"
    assert await stored_reply(talk) == shown


@pytest.mark.parametrize(
    ("sentence", "looked", "claim"),
    [
        ("The kitchen light is turned on.", False, True),
        ("The kitchen light is turned on.", True, False),
        ("I've locked the front door.", True, True),
        ("Done!", False, True),
        ("The light is on.", False, False),
        ("I haven't turned it on.", False, False),
        ("Should I turn it on?", False, False),
        ("The garage door has been closed.", False, True),
        ("The light is now on.", False, True),
        ("我把灯打开了。", True, True),
        ("灯已打开。", False, True),
        ("灯已经开着。", False, False),
        ("要我帮你打开吗？", False, False),
        ("我可以帮你打开客厅灯。", False, False),
        ("门已经锁上了。", True, False),
    ],
)
def test_claims_are_phrases_of_change_not_of_state(
    sentence: str, looked: bool, claim: bool
) -> None:
    """Own doing is a claim; a new state is one unless the turn looked; a state is none."""
    assert (ChangeClaims().claim(sentence, looked=looked) is not None) is claim


def test_near_identical_sentences_repeat_and_different_ones_do_not() -> None:
    """The third of a kind ends the reply (the second when long); a list of rooms does not."""
    repeats = SentenceRepeats()
    assert [
        repeats.feed(s)
        for s in (
            "You can turn on the light again.",
            "You can turn on the light again now.",
            "You can turn on the lights again.",
        )
    ] == [False, False, True]
    rooms = SentenceRepeats()
    assert not any(
        rooms.feed(f"The {room} light is on.")
        for room in ("kitchen", "living room", "bedroom", "hall", "bathroom")
    )
    long = "I can also help you with the lights, the heating and the music in every room at home."
    twice = SentenceRepeats()
    assert [twice.feed(long), twice.feed(long.replace("also ", ""))] == [False, True]
