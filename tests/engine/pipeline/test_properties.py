"""Property tests: chunking never matters, nothing is lost or empty, events keep order.

The display invariant checked here, exactly: for a stretch of text between two
structured events, the ``display_text`` of the sentences released for it concatenate to
that stretch with ``<think>…</think>`` blocks removed and leading/trailing whitespace
stripped (``str.strip``). With action tags in the vocabulary, tag removal also takes the
whitespace on one side of the tag, so that case is compared with all whitespace removed.
"""

from __future__ import annotations

import itertools
import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from custom_components.companion_agent.engine.chars import ZWJ, is_extender
from custom_components.companion_agent.engine.events import (
    SentenceOutput,
    ThinkingDelta,
    ToolCallEvent,
    TurnResult,
)
from custom_components.companion_agent.engine.pipeline import PipelineConfig, build_pipeline

from .drive import divide, run, sentences

WORDS = ["light", "on", "the", "OK", "Mr", "e.g", "U.S", "etc", "No", "a.m", "3", "14", "10"]
WORDS += ["example", "com", "https://x.io/a?b=1", "好的", "客厅", "灯", "はい", "電気", "A"]
MARKS = [".", ".", "!", "?", "。", "！", "？", "；", "…", "...", ",", "，", "、", ":"]
MARKS += ["“", "”", "「", "」", "(", ")", '"', "*", "**", "-", "#", "1."]
SPACES = [" ", " ", " ", "  ", "\n", "\n\n", "\t", "\u3000"]
CLUSTERS = ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇨🇳", "e\u0301", "❤\ufe0f"]
TAGS = ["[joy]", "[Wave]", "【开心】", "[OK]", "[unknown]"]
THOUGHT = "ZQX"
VOCABULARY = frozenset({"joy", "wave", "开心"})
KNOWN_TAG = re.compile(r"\[(?:joy|wave)\]|【开心】", re.IGNORECASE)
THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)
THOUGHT_BODY = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)

PROFILE = settings(max_examples=int(os.environ.get("PIPELINE_EXAMPLES", "150")), deadline=None)


def think_block(body: list[str]) -> str:
    """Return a raw thinking block whose words are all marked."""
    return "<think>" + " ".join(f"{THOUGHT}{word}" for word in body) + "</think>"


ATOM = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(WORDS),
    st.sampled_from(MARKS),
    st.sampled_from(SPACES),
    st.sampled_from(CLUSTERS),
    st.lists(st.sampled_from(["hmm", ".", "。", "\n"]), max_size=4).map(think_block),
)
TEXT = st.lists(ATOM, max_size=40).map("".join)
TAGGED_TEXT = st.lists(st.one_of(ATOM, st.sampled_from(TAGS)), max_size=40).map("".join)


def split(text: str, cuts: list[int]) -> list[str]:
    """Cut ``text`` at the given offsets."""
    points = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


CUTS = st.lists(st.integers(min_value=0, max_value=10_000), max_size=30)


def visible(text: str) -> str:
    """Return ``text`` without thinking blocks."""
    return THINK_BLOCK.sub("", text)


def squash(text: str) -> str:
    """Return ``text`` without any whitespace."""
    return "".join(text.split())


@PROFILE
@given(text=TAGGED_TEXT, cuts_a=CUTS, cuts_b=CUTS, show=st.booleans(), fast=st.booleans())
def test_any_chunking_gives_the_same_sentences(
    text: str, cuts_a: list[int], cuts_b: list[int], show: bool, fast: bool
) -> None:
    """Two chunkings of one reply give the same sentences and the same thinking text."""
    config = PipelineConfig(action_tags=VOCABULARY, show_thinking=show, faster_first_response=fast)
    pipeline = build_pipeline(config)
    one, two = run(pipeline, split(text, cuts_a)), run(pipeline, split(text, cuts_b))
    assert sentences(one) == sentences(two)
    think_one = "".join(item.text for item in one if isinstance(item, ThinkingDelta))
    think_two = "".join(item.text for item in two if isinstance(item, ThinkingDelta))
    assert think_one == think_two
    assert think_one == ("".join(THOUGHT_BODY.findall(text)) if show else "")


@PROFILE
@given(text=TAGGED_TEXT, cuts=CUTS, show=st.booleans())
def test_sentences_are_never_empty_and_never_leak_thinking(
    text: str, cuts: list[int], show: bool
) -> None:
    """Every sentence shows, says or does something; thinking is never shown inline or said."""
    out = run(
        build_pipeline(PipelineConfig(action_tags=VOCABULARY, show_thinking=show)),
        split(text, cuts),
    )
    for item in sentences(out):
        assert item.display_text.strip() or item.actions
        assert item.tts_text == " ".join(item.tts_text.split())
        assert THOUGHT not in item.display_text
        assert THOUGHT not in item.tts_text
        for banned in ("*", "[", "]", "【", "<", "http", "😀", "👍", "🇨", ZWJ, "\ufe0f", "#"):
            assert banned not in item.tts_text
    if not show:
        assert not any(isinstance(item, ThinkingDelta) for item in out)


@PROFILE
@given(text=TEXT, cuts=CUTS)
def test_display_text_concatenates_to_the_reply(text: str, cuts: list[int]) -> None:
    """Without tags, display text joins to the reply minus thinking, exactly (stripped)."""
    out = sentences(run(build_pipeline(), split(text, cuts)))
    assert "".join(item.display_text for item in out) == visible(text).strip()


@PROFILE
@given(text=TAGGED_TEXT, cuts=CUTS)
def test_display_text_is_the_reply_minus_tags_and_thinking(text: str, cuts: list[int]) -> None:
    """With tags, display text joins to the reply minus known tags and thinking."""
    out = sentences(run(build_pipeline(PipelineConfig(action_tags=VOCABULARY)), split(text, cuts)))
    assert squash("".join(item.display_text for item in out)) == squash(
        KNOWN_TAG.sub("", visible(text))
    )
    actions = [action for item in out for action in item.actions]
    assert actions == [
        {"[joy]": "joy", "[wave]": "wave", "【开心】": "开心"}[tag.lower()]
        for tag in KNOWN_TAG.findall(visible(text))
    ]


class Marker:
    """An item no stage knows, numbered."""

    def __init__(self, number: int) -> None:
        """Remember the number."""
        self.number = number


EVENT = st.one_of(
    st.integers(0, 99).map(
        lambda n: ToolCallEvent(tool_id=f"t{n}", tool_name="x", args={}, status="running")
    ),
    st.integers(0, 99).map(lambda n: TurnResult(text=f"r{n}")),
    st.integers(0, 99).map(Marker),
    st.integers(0, 99).map(lambda n: ThinkingDelta(text=f"adapter{n}")),
)


@PROFILE
@given(stream=st.lists(st.one_of(TEXT, EVENT), max_size=12), cuts=CUTS)
def test_structured_events_keep_their_order_and_text_stays_between_them(
    stream: list[object], cuts: list[int]
) -> None:
    """Events come out in input order; each stretch of text comes out between its events."""
    items: list[object] = []
    for item in stream:
        items.extend(split(item, cuts) if isinstance(item, str) else [item])
    out = run(build_pipeline(PipelineConfig(show_thinking=True)), items)

    def structured(seq: list[object]) -> list[object]:
        """Return the events, adapter thinking included, raw-think deltas left out."""
        return [
            item
            for item in seq
            if not isinstance(item, str | SentenceOutput)
            and not (isinstance(item, ThinkingDelta) and not item.text.startswith("adapter"))
        ]

    assert structured(out) == structured(stream)

    def stretches(seq: list[object], pick: type) -> list[str]:
        """Return the text between flush events (tool calls, results, unknown items)."""
        parts = [""]
        for item in seq:
            match item:
                case ThinkingDelta():
                    pass
                case str() | SentenceOutput():
                    text = item if isinstance(item, str) else item.display_text
                    parts[-1] += text if isinstance(item, pick) else ""
                case _:
                    parts.append("")
        return parts

    expected = [visible(part).strip() for part in stretches(stream, str)]
    assert stretches(out, SentenceOutput) == expected


@PROFILE
@given(
    text=st.lists(
        st.one_of(ATOM, st.sampled_from(CLUSTERS), st.sampled_from([" " * 9, "\n" * 12])),
        max_size=60,
    ).map("".join),
    cuts=CUTS,
    cap=st.integers(16, 60),
)
def test_divider_respects_the_cap_and_never_splits_a_cluster(
    text: str, cuts: list[int], cap: int
) -> None:
    """Sentences stay under the cap, chunking never matters, clusters stay whole."""
    text = visible(text)
    config = PipelineConfig(max_sentence_chars=cap)
    whole = divide([text], config)
    assert divide(split(text, cuts), config) == whole
    for piece in whole:
        assert 0 < len(piece) <= cap
        assert piece == piece.rstrip()
        assert not is_extender(piece[0])
        assert not piece.endswith(ZWJ)
    if not re.search(rf"\s{{{cap // 2},}}", text):
        assert "".join(whole) == text.strip()
