"""Golden replies in zh / ja / en / mixed: exact sentences under several chunkings.

A case's ``thought`` comes first as a ``ThinkingDelta``, the way the model adapter sends
reasoning; ``thinking`` is what of it must reach the display.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TypedDict

import pytest

from custom_components.companion_agent.engine.events import (
    OutputItem,
    SentenceOutput,
    ThinkingDelta,
)
from custom_components.companion_agent.engine.pipeline import PipelineConfig, build_pipeline

from .drive import chunkings, delta, displayed, modelled, run, shown

CORPUS = Path(__file__).parent / "data" / "golden.json"
TOKENISH = re.compile(r"\s*\w+|\s*\W")


class Settings(TypedDict, total=False):
    """The pipeline settings a golden case may set."""

    action_tags: list[str]
    show_thinking: bool
    faster_first_response: bool


class Case(TypedDict, total=False):
    """One golden reply and what must come out of it."""

    id: str
    lang: str
    text: str
    config: Settings
    sentences: list[tuple[str, str, list[str]]]
    thought: str
    thinking: str


def load() -> list[Case]:
    """Read the corpus."""
    cases: list[Case] = json.loads(CORPUS.read_text(encoding="utf-8"))
    return cases


def config_of(case: Case) -> PipelineConfig:
    """Build the case's pipeline settings."""
    settings = case.get("config", {})
    return PipelineConfig(
        action_tags=frozenset(settings.get("action_tags", ())),
        show_thinking=settings.get("show_thinking", False),
        faster_first_response=settings.get("faster_first_response", False),
    )


def test_corpus_covers_every_language() -> None:
    """The corpus holds zh, ja, en and mixed replies, with the issue's HA examples."""
    cases = load()
    assert {case["lang"] for case in cases} == {"zh", "ja", "en", "mixed"}
    texts = {case["text"] for case in cases}
    assert "Turned on the kitchen light." in texts
    assert "好的，已经打开客厅的灯。需要我调暗一点吗？" in texts


@pytest.mark.parametrize("case", load(), ids=lambda case: case["id"])
def test_a_recorded_reply_gives_its_sentences_however_it_is_chunked(case: Case) -> None:
    """The reply gives exactly the recorded sentences however it is chunked.

    The display deltas show what the sentences show, and keep all of the model's text.
    """
    text = case["text"]
    expected = [
        SentenceOutput(display_text=display, tts_text=tts, actions=tuple(actions))
        for display, tts, actions in case["sentences"]
    ]
    pipeline = build_pipeline(config_of(case))
    tokens = TOKENISH.findall(text)
    assert "".join(tokens) == text
    thought: list[OutputItem] = [ThinkingDelta(text=case["thought"])] if "thought" in case else []
    for chunks in [*chunkings(text), tokens]:
        out = run(pipeline, [*thought, *map(delta, chunks)])
        assert [item for item in out if isinstance(item, SentenceOutput)] == expected, chunks
        thinking = "".join(item.text for item in out if isinstance(item, ThinkingDelta))
        assert thinking == case.get("thinking", ""), chunks
        assert shown(out) == displayed(out), chunks
        assert modelled(out) == text, chunks
