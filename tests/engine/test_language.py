"""A reply in another language than the conversation's: never spoken, asked again once.

Whole turns through the real SDK and the scripted server, with the conversation language
HA gives (``ToolContext.language``, the language of the voice).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.events import TextDelta
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.turn.loop import (
    dominant_script,
    language_scripts,
)
from custom_components.companion_agent.engine.turn.prompt import persons_words
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.turns import Ask, Conversations, Finished, persona, run

NOTE = "(Answer in Simplified Chinese (zh-CN).)"


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


def in_language(request: Ask, language: str) -> Ask:
    """Return the request in a conversation held in ``language``."""
    return replace(request, context=replace(request.context, language=language))


def last_user_text(server: LLMServer, request: int) -> str:
    """Return the last user message the model received in one request."""
    messages = server.requests[request]["messages"]
    assert isinstance(messages, list)
    users = [m["content"] for m in messages if m["role"] == "user"]
    return str(users[-1])


async def turn(model: OpenAIChatModel, talk: Conversations, text: str, language: str) -> Finished:
    """Run one turn in ``language``."""
    return await run(TurnRunner(), persona(model), in_language(talk.request(text), language))


async def test_an_english_answer_to_a_chinese_conversation_is_asked_again(
    llm_server: LLMServer,
    chat_model: OpenAIChatModel,
    talk: Conversations,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The English start is never shown; the model is asked again once, with a note."""
    llm_server.script(
        Reply.text("The weather is sunny today and warm.", chunk_size=3),
        Reply.text("今天天气晴朗。", chunk_size=2),
    )
    with caplog.at_level(logging.INFO):
        done = await turn(chat_model, talk, "今天天气怎么样？", "zh-CN")
    assert done.text == "今天天气晴朗。"
    assert done.result.spoken == "今天天气晴朗。"
    assert done.result.outcome == "complete"
    assert len(llm_server.requests) == 2
    assert last_user_text(llm_server, 0) == "今天天气怎么样？"
    assert last_user_text(llm_server, 1) == f"今天天气怎么样？\n\n{NOTE}"
    assert llm_server.aborted <= 1
    assert [r.levelname for r in caplog.records if "asking again" in r.getMessage()] == ["INFO"]


async def test_the_right_language_is_not_held_back(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """An answer in the expected script goes on at its first letters (a tag is no letter)."""
    llm_server.script(
        Reply.text("[happy] 好的，马上开灯。", chunk_size=4),
        Reply.text("The light is on.", chunk_size=4),
    )
    chinese = await turn(chat_model, talk, "开灯", "zh-Hans")
    english = await turn(chat_model, talk, "Light on", "en-US")
    first = [next(i for i in t.items if isinstance(i, TextDelta)) for t in (chinese, english)]
    assert first[0].model_text.startswith("[happy] 好")  # the emotion tag is never shown
    assert first[0].text.startswith("好")
    assert len(first[0].model_text) <= 12  # out with the first chunk that holds a Han letter
    assert first[1].text.strip() == "The"  # out with the first chunk
    assert len(llm_server.requests) == 2


CASES = {
    # bounded: one retry per turn; the second answer is what the person gets
    "second wrong": ("今天天气怎么样？", "zh-CN", ["Sunny today.", "Still sunny."]),
    # someone writing English to a Chinese voice gets English, not a retry
    "person's own": ("How is the weather?", "zh-CN", ["It is sunny and warm."]),
    # a reply that ends before the usual weight is judged on what there is
    "short": ("开灯", "zh-CN", ["Sure thing.", "好的。"]),
    # a language the table does not know: whatever the model says goes through
    "unknown": ("Weather?", "tlh", ["今天天气晴朗，很暖和。"]),
}


@pytest.mark.parametrize("case", CASES)
async def test_what_is_asked_again_and_what_is_not(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations, case: str
) -> None:
    """The person gets the last reply scripted: one request, or two when asked again."""
    said, language, replies = CASES[case]
    llm_server.script(*(Reply.text(text) for text in replies))
    done = await turn(chat_model, talk, said, language)
    assert done.text == replies[-1]
    assert len(llm_server.requests) == len(replies)


def test_language_tags_map_to_scripts_and_text_is_weighed_by_its_letters() -> None:
    """Language tags map to scripts; text is weighed by its letters, tags left out."""
    assert language_scripts("zh-Hans") == {"han"}
    assert language_scripts("ja") == {"han", "kana"}
    assert language_scripts("ru-RU") == {"cyrillic"}
    assert language_scripts("de-CH") == {"latin"}
    assert language_scripts("tlh") == frozenset()
    assert dominant_script("[smile] [wave] 你好") == ("han", 6)
    assert dominant_script("Привет, мир") == ("cyrillic", 9)
    assert dominant_script("12:30 !!") == (None, 0)


def test_the_persons_words_leave_out_context_and_the_homes_framing() -> None:
    """The check looks at what the person said, not the reference block or a home turn."""
    block = "[memory context ab12] notice\n(notes) The cat is Miso.\n[/memory context ab12]\n\n"
    assert persons_words(block + "你好") == "你好"
    assert persons_words("plain words") == "plain words"
    from custom_components.companion_agent.engine.turn.prompt import proactive_words

    assert persons_words(proactive_words("Say good morning.")) == ""
