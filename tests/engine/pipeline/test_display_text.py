"""Display text at token level: tags held only while open, whitespace as in the sentences."""

from __future__ import annotations

import pytest

from custom_components.companion_agent.engine.events import (
    OutputItem,
    SentenceOutput,
    TextDelta,
    ToolCallEvent,
)
from custom_components.companion_agent.engine.pipeline import (
    ActionTags,
    PipelineConfig,
    actions_extractor,
    build_pipeline,
)

from .drive import delta, displayed, modelled, run, sentences, shown, trace

CALL = ToolCallEvent(tool_id="c1", tool_name="light_on", args={}, status="running")
TAGS = PipelineConfig(action_tags=frozenset({"joy", "Wave", "开心"}))


def sentence(text: str, actions: tuple[str, ...] = ()) -> SentenceOutput:
    """Return a raw sentence as the divider makes it."""
    return SentenceOutput(display_text=text, tts_text=text, actions=actions)


def test_plain_text_is_displayed_token_by_token() -> None:
    """Without tags each token shows before the next is pulled; trailing whitespace waits."""
    tokens = ["Hello", " there", ",\n", "friend", ". ", "Bye"]
    timed = [
        (n, i.text) for n, i in trace(build_pipeline(TAGS), tokens) if isinstance(i, TextDelta)
    ]
    assert timed == [(1, "Hello"), (2, " there"), (3, ","), (4, "\nfriend"), (5, "."), (6, " Bye")]


def test_a_tag_holds_text_only_until_it_closes() -> None:
    """From ``[`` nothing shows until the tag closes; the text after it shows at once."""
    tokens = ["Hi", " [jo", "y]", " there", " [OK", "]", " now"]
    timed = [
        (n, i.text) for n, i in trace(build_pipeline(TAGS), tokens) if isinstance(i, TextDelta)
    ]
    assert timed == [(1, "Hi"), (4, " there"), (6, " [OK]"), (7, " now")]


@pytest.mark.parametrize(
    ("tokens", "released"),
    [
        (["[not a tag, just", " a long bracketed", " aside going on and on"], "[not a"),
        (["Say [jo", "\nOK"], "Say [jo\nOK"),
        (["A [b [joy] c"], "A [b c"),
        (["【x[joy]】 kept"], "【x[joy]】 kept"),
    ],
)
def test_an_open_bracket_gives_up_at_a_newline_a_bracket_or_40_characters(
    tokens: list[str], released: str
) -> None:
    """An open candidate is text once it can no longer close as a tag."""
    assert shown(run(build_pipeline(TAGS), tokens)).startswith(released)


@pytest.mark.parametrize(
    ("text", "display", "sentences_shown"),
    [
        ("Hi there [wave].", "Hi there.", ["Hi there."]),
        ("[joy] Hello!", "Hello!", ["Hello!"]),
        ("Hi! [wave]There", "Hi! There", ["Hi!", " There"]),
        ("Hi! [wave]\nThere", "Hi!\nThere", ["Hi!", "\nThere"]),
        ("OK. [joy] [wave] Go", "OK. Go", ["OK.", " Go"]),
        ("Hello [WAVE] there.", "Hello there.", ["Hello there."]),
        ("好的。【开心】 好！", "好的。好！", ["好的。", "好！"]),
        ("Press [OK] now [joy]", "Press [OK] now", ["Press [OK] now"]),
        ("  \n[joy]Hi  ", "Hi", ["Hi"]),
    ],
)
def test_display_deltas_match_the_sentences_however_chunked(
    text: str, display: str, sentences_shown: list[str]
) -> None:
    """Deltas and sentences show the same text, tags gone; the model text is all kept."""
    pipeline = build_pipeline(TAGS)
    for chunks in ([text], list(text), [text[i : i + 3] for i in range(0, len(text), 3)]):
        out = run(pipeline, chunks)
        assert [s.display_text for s in sentences(out)] == sentences_shown, chunks
        assert shown(out) == displayed(out) == display, chunks
        assert modelled(out) == text, chunks


def test_a_dropped_tag_rides_in_the_model_text_of_the_next_delta() -> None:
    """What a delta shows and the model text it consumed, dropped tag included."""
    out = run(actions_extractor(TAGS), ["Hi", " there", " [wa", "ve]", "."])
    assert [(i.text, i.model_text) for i in out if isinstance(i, TextDelta)] == [
        ("Hi", "Hi"),
        (" there", " there"),
        (".", " [wave]."),
    ]


def test_held_text_goes_out_before_a_tool_call() -> None:
    """A tool call flushes held model text on an empty delta, then waiting actions."""
    out = run(build_pipeline(TAGS), ["Let me check.", " [joy]", CALL, "On."])
    assert out == [
        delta("Let me check."),
        sentence("Let me check."),
        TextDelta(text="", model_text=" [joy]"),
        SentenceOutput(display_text="", tts_text="", actions=("joy",)),
        CALL,
        delta("On."),
        sentence("On."),
    ]


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
    items: list[OutputItem] = [sentence("[joy]"), sentence("\nHi!"), sentence(" [wave]"), CALL]
    assert run(stage, items) == [
        SentenceOutput(display_text="\nHi!", tts_text="\nHi!", actions=("joy",)),
        SentenceOutput(display_text="", tts_text="", actions=("Wave",)),
        CALL,
    ]
    assert run(stage, [sentence("[joy]")]) == [
        SentenceOutput(display_text="", tts_text="", actions=("joy",))
    ]
