"""The first sentence guessed before the next token decides it: when a guess is made, that
it is exactly the speech the turn's own pipeline gives when the guess is right, and that
the items pass through untouched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from custom_components.companion_agent.engine.events import (
    OutputItem,
    SentenceOutput,
    ThinkingDelta,
    ToolCallEvent,
)
from custom_components.companion_agent.engine.pipeline import (
    BoundaryScanner,
    PipelineConfig,
    build_pipeline,
    first_guesses,
    speech_config,
)
from tests.engine.pipeline.drive import drain, items_of

CONFIG = speech_config(frozenset({"happy", "wave"}))


def guessed(feed: Sequence[OutputItem | str], config: PipelineConfig = CONFIG) -> list[str]:
    """Return the guesses ``first_guesses`` makes over ``feed``, checking it passes it on."""
    items = items_of(feed)
    guesses: list[str] = []

    async def source() -> AsyncIterator[OutputItem]:
        """Yield the items."""
        for item in items:
            yield item

    passed = drain(first_guesses(source(), config, lambda: build_pipeline(config), guesses.append))
    assert passed == items
    return guesses


def first_speech(text: str, config: PipelineConfig = CONFIG) -> str:
    """Return the first sentence's speech the turn's pipeline gives for ``text``."""
    out = drain(build_pipeline(config)(iter_items(text)))
    return next(i.tts_text for i in out if isinstance(i, SentenceOutput) and i.tts_text)


async def iter_items(text: str) -> AsyncIterator[OutputItem]:
    """Yield ``text`` as one delta."""
    for item in items_of([text]):
        yield item


def test_a_word_and_a_full_stop_are_guessed_as_the_pipeline_will_speak_them() -> None:
    tokens = ["[happy] Good", " **morning**", " to", " you", " all", " at", " home", "."]
    assert guessed([*tokens, " The", " sun."]) == ["Good morning to you all at home."]
    assert guessed(tokens) == [first_speech("".join(tokens) + " The sun.")]


@pytest.mark.parametrize(
    "tokens",
    [
        ["It is 21", ".", "5 degrees"],  # a number: 21.5 is as likely as an end
        ["Ask Mr", ".", " Smith"],  # never an end
        ["Buy apples etc", ".", " then go"],  # an end only before a capital
        ["Hmm", "...", " let me see"],  # an ellipsis waits for the word after it
        ["I said (yes", ".", " fine"],  # inside brackets nothing ends
        ["你好", "。", "今天好"],  # a full stop after CJK ends at once: nothing to guess
    ],
)
def test_no_guess_where_a_gap_would_not_surely_end_the_sentence(tokens: list[str]) -> None:
    """The text ends without a likely end, so any guess would be one of these."""
    assert guessed(tokens) == []


def test_each_likely_end_before_the_first_sentence_is_guessed_and_none_after() -> None:
    tokens = ["I turned on light", ".", "kitchen now", ".", " And", " the", " fan", "."]
    assert guessed(tokens) == ["I turned on light.", "I turned on light.kitchen now."]


def test_guessing_stops_at_a_tool_call_and_passes_thinking() -> None:
    call = ToolCallEvent(tool_id="c1", tool_name="light", args={}, status="running")
    assert guessed([ThinkingDelta(text="hm."), "Good", " morning", "."]) == ["Good morning."]
    assert guessed(["Wait", call, " Done", "."]) == []


@given(st.lists(st.sampled_from(["Good", " morning", ".", " ", "A", "3", "!", "Mr", "?"])))
def test_a_guess_equals_the_first_sentence_whenever_a_gap_comes_next(
    tokens: list[str],
) -> None:
    """For any text: each guess is the first sentence's speech if a gap and more followed."""
    for cut in range(1, len(tokens) + 1):
        text = "".join(tokens[:cut])
        scanner = BoundaryScanner(CONFIG)
        if scanner.feed(text) or not scanner.gap_would_end():
            continue
        assert guessed(tokens[:cut])[-1:] == [first_speech(text + " Next one.")]
