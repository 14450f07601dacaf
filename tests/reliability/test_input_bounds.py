"""Bounds on what a turn takes in: a huge utterance, a flood of them, a long history."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.turn.limits import (
    RateLimiter,
    TurnLimits,
    estimate_tokens,
)
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.lines import ENGLISH
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.turns import Conversations, persona, run


@pytest.fixture
def talk(tmp_path: Path) -> Conversations:
    """Return a real exchange store (one SQLite file) under a temporary folder."""
    return Conversations(tmp_path / "conversations")


def sent_chars(server: LLMServer, request: int) -> int:
    """Return how many characters of messages one request sent the model."""
    return len(json.dumps(server.requests[request]["messages"], ensure_ascii=False))


async def test_a_huge_utterance_is_cut_and_the_model_is_told(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """200,000 characters: the model gets the first 4,000 and a note saying so."""
    llm_server.script(Reply.text("That was long."))
    done = await run(TurnRunner(), persona(chat_model), talk.request("x" * 200_000))
    assert done.result.outcome == "complete"
    assert sent_chars(llm_server, 0) < 6_000
    user = str(llm_server.requests[0]["messages"][-1]["content"])  # type: ignore[index]
    assert "(input) The person's message had 200000 characters; only the first 4000" in user


async def test_history_sent_to_the_model_stays_within_its_budget(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Three long turns: the third request drops the oldest turns, not the new words."""
    runner, who = TurnRunner(limits=TurnLimits(history_tokens=2000)), persona(chat_model)
    llm_server.script(*[Reply.text("Noted.")] * 3)
    for number in range(3):
        await run(runner, who, talk.request(f"{number} " + "word " * 700))
    messages = llm_server.requests[2]["messages"]
    assert isinstance(messages, list)
    history = messages[1:-1]
    assert sum(estimate_tokens(str(m["content"])) for m in history) <= 2000
    assert str(messages[-1]["content"]).startswith("2 word")


async def test_a_flood_of_turns_is_answered_without_the_model(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Past the per-person pace the turn gets a short spoken line and no model call."""
    runner, who = TurnRunner(limits=TurnLimits(turns_per_minute=3)), persona(chat_model)
    results = [await run(runner, who, talk.request("hi")) for _ in range(5)]
    assert len(llm_server.requests) == 3
    assert [r.result.outcome for r in results[3:]] == ["failed", "failed"]
    assert results[4].text == ENGLISH.busy
    assert results[4].sentences[-1].tts_text == ENGLISH.busy


async def test_satellites_without_a_person_each_have_their_own_pace(
    llm_server: LLMServer, chat_model: OpenAIChatModel, talk: Conversations
) -> None:
    """Voice satellites carry no user: one busy satellite does not silence another."""
    runner, who = TurnRunner(limits=TurnLimits(turns_per_minute=1)), persona(chat_model)
    kitchen = replace(talk.request("hi", user_id=None), device_id="kitchen")
    hall = replace(talk.request("hi", user_id=None, conversation_id="c2"), device_id="hall")
    outcomes = [(await run(runner, who, r)).result.outcome for r in (kitchen, kitchen, hall)]
    assert outcomes == ["complete", "failed", "complete"]


def test_the_pace_is_per_person_and_per_device() -> None:
    """Another person, or the same person on another device, has a pace of their own."""
    now = [0.0]
    pace = RateLimiter(2, clock=lambda: now[0])
    assert pace.allow("user:a", "device:kitchen")
    assert pace.allow("user:a", "device:kitchen")
    assert not pace.allow("user:a", "device:hall")
    assert pace.allow("user:b", "device:hall")
    now[0] = 61.0
    assert pace.allow("user:a", "device:kitchen")


def test_token_estimate_counts_wide_characters_one_each() -> None:
    """CJK text is about a token a character; other text about four characters a token."""
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("a" * 40) == 10
