"""Each stage on its own and composed: pass-through, order, release timing, decorators."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from custom_components.companion_agent.engine.events import (
    SentenceOutput,
    ThinkingDelta,
    ToolCallEvent,
    TurnResult,
)
from custom_components.companion_agent.engine.pipeline import (
    ActionTags,
    PipelineConfig,
    Stage,
    actions_extractor,
    build_pipeline,
    display_processor,
    sentence_divider,
    speakable,
    tts_filter,
)

from .drive import drain, run, sentences, trace

CALL = ToolCallEvent(tool_id="c1", tool_name="light_on", args={"area": "kitchen"}, status="running")
DONE = ToolCallEvent(
    tool_id="c1", tool_name="light_on", args={"area": "kitchen"}, status="completed", result="ok"
)
END = TurnResult(text="done")
TAGS = PipelineConfig(action_tags=frozenset({"joy", "Wave", "开心"}))


class Custom:
    """An item no stage knows."""


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
    custom = Custom()
    thinking = ThinkingDelta(text="hmm")
    items: list[object] = [thinking, CALL, custom, DONE, END]
    out = run(stage, items)
    assert len(out) == len(items)
    assert all(got is want for got, want in zip(out, items, strict=True))


def test_divider_turns_raw_think_blocks_into_thinking() -> None:
    """``<think>`` split across chunks becomes ThinkingDelta and never enters a sentence."""
    chunks = ["<thi", "nk>secret plan. ", "more</th", "ink>\n\nHello there.", " Bye."]
    out = run(sentence_divider(), chunks)
    assert "".join(i.text for i in out if isinstance(i, ThinkingDelta)) == "secret plan. more"
    assert [s.display_text for s in sentences(out)] == ["Hello there.", " Bye."]


def test_adapter_thinking_does_not_end_the_sentence_in_progress() -> None:
    """ThinkingDelta passes at once; the half sentence around it stays one sentence."""
    out = run(sentence_divider(), ["Half a ", ThinkingDelta(text="t"), "sentence."])
    assert out == [ThinkingDelta(text="t"), sentence("Half a sentence.")]


def test_structured_event_releases_text_before_it() -> None:
    """Text before a tool call comes out before the call, even without a final mark."""
    out = run(sentence_divider(), ["Let me check", CALL, DONE, "It is on.", END])
    assert out == [sentence("Let me check"), CALL, DONE, sentence("It is on."), END]


def test_unclosed_think_block_ends_with_its_round() -> None:
    """A round that ends inside ``<think>`` does not silence the next round."""
    out = run(sentence_divider(), ["<think>still thinking", CALL, "It is on."])
    assert out == [ThinkingDelta(text="still thinking"), CALL, sentence("It is on.")]


def test_surrogate_halves_across_chunks_are_joined() -> None:
    """A non-BMP character sent as two UTF-16 halves comes out whole."""
    out = run(sentence_divider(), ["Nice \ud83d", "\ude00 day."])
    assert out == [sentence("Nice 😀 day.")]


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


def test_decorator_forms_match_the_composed_pipeline() -> None:
    """Stacked stage decorators, the pipeline as decorator and direct calls agree."""
    config = PipelineConfig(action_tags=frozenset({"joy"}), show_thinking=True)
    tokens: list[object] = ["[joy] Hi", " there! <think>x</think>", CALL, "好的。"]

    @tts_filter(config)
    @display_processor(config)
    @actions_extractor(config)
    @sentence_divider(config)
    async def stacked() -> AsyncIterator[object]:
        """Yield the tokens."""
        for token in tokens:
            yield token

    @build_pipeline(config)
    async def whole() -> AsyncIterator[object]:
        """Yield the tokens."""
        for token in tokens:
            yield token

    direct = run(build_pipeline(config), tokens)
    assert direct[0] == SentenceOutput(
        display_text="Hi there!", tts_text="Hi there!", actions=("joy",)
    )
    assert whole.__name__ == "whole"
    assert drain(stacked()) == direct
    assert drain(whole()) == direct


@pytest.mark.parametrize(
    ("text", "display", "actions"),
    [
        ("[joy] Hello!", "Hello!", ("joy",)),
        (" [joy] Hello!", " Hello!", ("joy",)),
        ("Hello [WAVE] there.", "Hello there.", ("Wave",)),
        ("Hello there [wave].", "Hello there.", ("Wave",)),
        ("[joy][wave] Hi.", "Hi.", ("joy", "Wave")),
        ("【开心】好的。", "好的。", ("开心",)),
        ("Press [OK] to go [ joy ].", "Press [OK] to go.", ("joy",)),
        ("No tags [here].", "No tags [here].", ()),
    ],
)
def test_action_tags_are_pulled_out(text: str, display: str, actions: tuple[str, ...]) -> None:
    """Known tags leave the text with their spacing; unknown brackets stay text."""
    assert ActionTags(TAGS.action_tags).extract(text) == (display, actions)


def test_tag_only_sentences_ride_with_the_next_one() -> None:
    """A sentence of tags alone adds its actions to the next sentence, or to a flush."""
    stage = actions_extractor(TAGS)
    items: list[object] = [sentence("[joy]"), sentence("\nHi!"), sentence(" [wave]"), CALL]
    assert run(stage, items) == [
        SentenceOutput(display_text="\nHi!", tts_text="\nHi!", actions=("joy",)),
        SentenceOutput(display_text="", tts_text="", actions=("Wave",)),
        CALL,
    ]
    assert run(stage, [sentence("[joy]")]) == [
        SentenceOutput(display_text="", tts_text="", actions=("joy",))
    ]


def test_display_shows_or_hides_thinking() -> None:
    """ThinkingDelta passes only with show_thinking; stray think tags never show."""
    items: list[object] = [ThinkingDelta(text="hmm"), sentence("Hi </think>there.")]
    cleaned = SentenceOutput(display_text="Hi there.", tts_text="Hi </think>there.")
    assert run(display_processor(PipelineConfig(show_thinking=True)), items) == [
        ThinkingDelta(text="hmm"),
        cleaned,
    ]
    assert run(display_processor(), items) == [cleaned]


@pytest.mark.parametrize(
    ("text", "spoken"),
    [
        ("Turned on the **kitchen** light 💡.", "Turned on the kitchen light."),
        ("See https://example.com/a?b=1. Then go.", "See link. Then go."),
        ("详情见 https://example.com/x。", "详情见 链接。"),
        ("詳しくは https://example.jp を見て。", "詳しくは リンク を見て。"),
        ("Read [the docs](https://x.io/docs) now", "Read the docs now"),
        ("\n- Kitchen: on", "Kitchen: on"),
        ("\n## Lights", "Lights"),
        ("> quoted `code` here", "quoted code here"),
        ("Press [OK] (twice) now", "Press OK twice now"),
        ("（笑）好的～", "笑好的"),
        ("Set light.kitchen_light to 50%", "Set light.kitchen light to 50%"),
        ("Family 👨\u200d👩\u200d👧 and flag 🇨🇳 and 👍🏽!", "Family and flag and!"),
        ("！下一句。", "下一句。"),
        ("| a | b |", "a b"),
        ("🎉🎉", ""),
        ("...", ""),
        ("</think>", ""),
        ("Temp is 21°C.", "Temp is 21°C."),
    ],
)
def test_speakable_text(text: str, spoken: str) -> None:
    """TTS text has no markdown, emoji, URLs, asterisks or brackets."""
    assert speakable(text) == spoken


def test_url_word_can_be_configured() -> None:
    """A profile may choose the word said for URLs."""
    assert speakable("Go to http://a.b/c now", "a web link") == "Go to a web link now"


def test_tts_filter_keeps_display_only_sentences_and_drops_empty_ones() -> None:
    """No speech but something to show or act on: kept with tts ''; nothing at all: dropped."""
    items: list[object] = [
        sentence(" 🎉"),
        SentenceOutput(display_text="", tts_text="", actions=("joy",)),
        SentenceOutput(display_text="", tts_text="</think>"),
        SentenceOutput(display_text=" ", tts_text=""),
    ]
    assert run(tts_filter(), items) == [
        SentenceOutput(display_text=" 🎉", tts_text=""),
        SentenceOutput(display_text="", tts_text="", actions=("joy",)),
    ]


def test_config_rejects_settings_no_stage_can_honour() -> None:
    """A cap too small to hold a sentence, or a zero clause length, is refused."""
    with pytest.raises(ValueError, match="max_sentence_chars"):
        PipelineConfig(max_sentence_chars=4)
    with pytest.raises(ValueError, match="first_clause_min_chars"):
        PipelineConfig(first_clause_min_chars=0)
