"""Whether a finished turn waits for the person's answer: a question, or a held call."""

from __future__ import annotations

import pytest

from custom_components.companion_agent.engine.events import ToolCallEvent, TurnResult
from custom_components.companion_agent.engine.turn.follow_ups import asks, expects_answer

HELD = ToolCallEvent(
    tool_id="call_1", tool_name="HassTurnOff", args={}, status="pending_confirmation"
)
DONE = ToolCallEvent(tool_id="call_2", tool_name="HassTurnOn", args={}, status="completed")


@pytest.mark.parametrize(
    "text",
    [
        "Shall I unlock the front door?",
        "¿Abro la puerta?",
        "要我帮你开门吗？",
        "Θέλεις να ανοίξω την πόρτα;",
        "Θέλεις να ανοίξω την πόρτα\u037e",
        "هل أفتح الباب؟",
        'She asked: "Is it raining?"  ',
        "Which one (the red one?)",
        "Shall I go on?\n",
    ],
)
def test_a_question_asks(text: str) -> None:
    """Question marks of several scripts end a question; quotes and brackets after it too."""
    assert asks(text)


@pytest.mark.parametrize(
    "text",
    [
        "The door is unlocked.",
        "Is it raining? Take an umbrella.",
        "Please say yes or no.",
        "",
        "Why? Because.",
        "好的。",
    ],
)
def test_a_statement_does_not(text: str) -> None:
    """Only the end counts: a question followed by more words asks nothing."""
    assert not asks(text)


def test_a_held_call_waits_for_an_answer_whatever_was_said() -> None:
    """A call held for the person's yes waits, even when the reply does not end as a question."""
    held = TurnResult(outcome="complete", text="", tool_calls=(DONE, HELD))
    assert expects_answer(held, "I need your yes first. Please say yes or no.")
    done = TurnResult(outcome="complete", text="", tool_calls=(DONE,))
    assert not expects_answer(done, "The light is on.")
    assert expects_answer(done, "The light is on. Anything else?")


@pytest.mark.parametrize("outcome", ["interrupted", "failed"])
def test_a_turn_spoken_over_or_failed_waits_for_nothing(outcome: str) -> None:
    """Even a question, even a held call: the person spoke over it, or it never answered."""
    result = TurnResult(outcome=outcome, text="", tool_calls=(HELD,))  # type: ignore[arg-type]
    assert not expects_answer(result, "Shall I unlock the front door?")


@pytest.mark.parametrize("outcome", ["complete", "cut", "timed_out"])
def test_a_turn_that_ended_otherwise_asks_what_it_said(outcome: str) -> None:
    """A reply cut short or out of time still asked what it said."""
    result = TurnResult(outcome=outcome, text="")  # type: ignore[arg-type]
    assert expects_answer(result, "Shall I go on?")
    assert not expects_answer(result, "That is all.")
