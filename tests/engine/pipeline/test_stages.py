"""Each stage on its own and composed: pass-through, order, release timing, composition."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from custom_components.companion_agent.engine import events
from custom_components.companion_agent.engine.events import (
    OutputItem,
    SentenceOutput,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
)
from custom_components.companion_agent.engine.pipeline import (
    PipelineConfig,
    Stage,
    actions_extractor,
    build_pipeline,
    display_processor,
    sentence_divider,
    tts_filter,
)

from .drive import delta, modelled, run, sentences, shown, trace

CALL = ToolCallEvent(tool_id="c1", tool_name="light_on", args={"area": "kitchen"}, status="running")
DONE = ToolCallEvent(
    tool_id="c1", tool_name="light_on", args={"area": "kitchen"}, status="completed", result="ok"
)
TAGS = PipelineConfig(action_tags=frozenset({"joy", "Wave", "开心"}))
PIPELINE_DIR = Path(__file__).parents[3] / "custom_components/companion_agent/engine/pipeline"


class Custom:
    """An item no stage knows (a transformer plugin's own item)."""


def sentence(text: str, actions: tuple[str, ...] = ()) -> SentenceOutput:
    """Return a raw sentence as the divider makes it."""
    return SentenceOutput(display_text=text, tts_text=text, actions=actions)


@pytest.mark.parametrize(
    "stage",
    [
        sentence_divider(TAGS),
        actions_extractor(TAGS),
        display_processor(PipelineConfig(show_thinking=True)),
        tts_filter(TAGS),
        build_pipeline(PipelineConfig(show_thinking=True)),
    ],
    ids=lambda stage: stage.name,
)
def test_unknown_and_structured_items_pass_untouched_in_order(stage: Stage) -> None:
    """Items a stage does not transform come out as the very same objects, in order."""
    custom = cast(OutputItem, Custom())
    items: list[OutputItem] = [
        ThinkingDelta(text="hmm"),
        CALL,
        custom,
        DONE,
        events.Played(heard=events.Heard.first(2)),
        events.Interrupted(reason="the person spoke"),
    ]
    out = run(stage, items)
    assert len(out) == len(items)
    assert all(got is want for got, want in zip(out, items, strict=True))


def test_the_pipeline_does_not_split_thinking_out_of_text_any_more() -> None:
    """The adapter owns ``<think>``; no pipeline module imports the old splitter."""
    for module in PIPELINE_DIR.glob("*.py"):
        source = module.read_text(encoding="utf-8")
        assert "thinking import" not in source, module.name
        assert "ThinkSplitter" not in source, module.name


def test_divider_forwards_each_delta_before_the_sentence_it_completes() -> None:
    """Deltas go on at once and in order; a sentence comes right after its own text."""
    out = run(sentence_divider(), ["Hello", " there.", " How", " are you?"])
    assert out == [
        delta("Hello"),
        delta(" there."),
        sentence("Hello there."),
        delta(" How"),
        delta(" are you?"),
        sentence(" How are you?"),
    ]


def test_divider_splits_a_delta_where_a_sentence_ends_in_it() -> None:
    """A delta holding one sentence's end and the next one's start goes on in two pieces."""
    out = run(sentence_divider(), ["好的。需要", "吗？Fine. Thanks"])
    assert out == [
        delta("好的。"),
        sentence("好的。"),
        delta("需要"),
        delta("吗？"),
        sentence("需要吗？"),
        delta("Fine."),
        sentence("Fine."),
        delta(" Thanks"),
        sentence(" Thanks"),
    ]


def test_divider_splits_other_deltas_keeping_their_model_text_on_the_first_piece() -> None:
    """A delta whose model text is not its text (a host notice) splits the same way."""
    notice = TextDelta(text="Sorry. Try again", model_text="(notice)")
    assert run(sentence_divider(), [notice]) == [
        TextDelta(text="Sorry.", model_text="(notice)"),
        sentence("Sorry."),
        TextDelta(text=" Try again", model_text=""),
        sentence(" Try again"),
    ]


def test_adapter_thinking_does_not_end_the_sentence_in_progress() -> None:
    """ThinkingDelta passes at once; the half sentence around it stays one sentence."""
    out = run(sentence_divider(), ["Half a ", ThinkingDelta(text="t"), "sentence."])
    assert sentences(out) == [sentence("Half a sentence.")]
    assert out.index(ThinkingDelta(text="t")) == 1


def test_structured_event_releases_text_before_it() -> None:
    """Text before a tool call comes out before the call, even without a final mark."""
    out = run(sentence_divider(), ["Let me check", CALL, DONE, "It is on."])
    assert out == [
        delta("Let me check"),
        sentence("Let me check"),
        CALL,
        DONE,
        delta("It is on."),
        sentence("It is on."),
    ]


def test_surrogate_halves_across_chunks_are_joined() -> None:
    """A non-BMP character sent as two UTF-16 halves comes out whole, in text and model text."""
    out = run(sentence_divider(), ["Nice \ud83d", "\ude00 day."])
    assert sentences(out) == [sentence("Nice 😀 day.")]
    assert shown(out) == modelled(out) == "Nice 😀 day."


def test_sentence_leaves_before_the_next_token_is_pulled() -> None:
    """A CJK sentence is out before the next token is asked for; ``.`` needs one more."""
    tokens = ["好的", "，已经打开", "客厅的灯。", "需要", "吗？", "The light", " is on.", " OK"]
    timed = trace(build_pipeline(), tokens)
    got = [
        (pulled, item.display_text) for pulled, item in timed if isinstance(item, SentenceOutput)
    ]
    assert got == [
        (3, "好的，已经打开客厅的灯。"),
        (5, "需要吗？"),
        (8, "The light is on."),
        (8, " OK"),
    ]


def test_display_shows_or_hides_thinking_and_leaves_text_alone() -> None:
    """ThinkingDelta passes only with show_thinking; deltas and sentences pass unchanged."""
    items: list[OutputItem] = [ThinkingDelta(text="hmm"), delta("Hi there."), sentence("Hi.")]
    assert run(display_processor(PipelineConfig(show_thinking=True)), items) == items
    assert run(display_processor(), items) == items[1:]


def test_tts_filter_keeps_display_only_sentences_and_drops_empty_ones() -> None:
    """No speech but something to show or act on: kept with tts ''; nothing at all: dropped."""
    items: list[OutputItem] = [
        sentence(" 🎉"),
        SentenceOutput(display_text="", tts_text="", actions=("joy",)),
        SentenceOutput(display_text="", tts_text="</think>"),
        SentenceOutput(display_text=" ", tts_text=""),
        delta(" 🎉"),
    ]
    assert run(tts_filter(), items) == [
        SentenceOutput(display_text=" 🎉", tts_text=""),
        SentenceOutput(display_text="", tts_text="", actions=("joy",)),
        delta(" 🎉"),
    ]


def test_extra_stages_run_after_the_standard_four() -> None:
    """A transformer stage sees finished sentences and text deltas, in order."""

    async def shout(stream: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Upper-case what TTS says."""
        async for item in stream:
            match item:
                case SentenceOutput(tts_text=tts):
                    yield SentenceOutput(
                        display_text=item.display_text, tts_text=tts.upper(), actions=item.actions
                    )
                case _:
                    yield item

    pipeline = build_pipeline(TAGS, extra_stages=[Stage(name="shout", apply=shout)])
    assert pipeline.name.endswith("tts_filter → shout")
    out = run(pipeline, ["[joy] **Hi** there."])
    assert out == [
        TextDelta(text="**Hi** there.", model_text="[joy] **Hi** there."),
        SentenceOutput(display_text="**Hi** there.", tts_text="HI THERE.", actions=("joy",)),
    ]


def test_config_rejects_settings_no_stage_can_honour() -> None:
    """A cap too small to hold a sentence, or a zero clause length, is refused."""
    with pytest.raises(ValueError, match="max_sentence_chars"):
        PipelineConfig(max_sentence_chars=4)
    with pytest.raises(ValueError, match="first_clause_min_chars"):
        PipelineConfig(first_clause_min_chars=0)
