"""Property tests: chunking never matters, nothing is lost or empty, events keep order.

The display invariants checked here, exactly:

- for a stretch of text between two structured events, the ``display_text`` of the
  sentences released for it concatenate to that stretch stripped (``str.strip``); with
  action tags in the vocabulary, tag removal also takes the whitespace on one side of the
  tag, so that case is compared with all whitespace removed;
- the ``TextDelta.text`` values concatenate to the ``display_text`` values, stretch by
  stretch, and the ``TextDelta.model_text`` values to the model text that came in, under
  any token split, sentence cap and first-sentence rule.

Thinking arrives as ``ThinkingDelta`` from the adapter and never reaches text.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import cast

from hypothesis import given, settings
from hypothesis import strategies as st

from custom_components.companion_agent.engine.chars import ZWJ, is_extender
from custom_components.companion_agent.engine.events import (
    OutputItem,
    SentenceOutput,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
)
from custom_components.companion_agent.engine.pipeline import (
    ActionTags,
    BoundaryScanner,
    PipelineConfig,
    build_pipeline,
)

from .drive import delta, divide, modelled, run, sentences, shown, trace

WORDS = ["light", "on", "the", "OK", "Mr", "e.g", "U.S", "etc", "No", "a.m", "3", "14", "10"]
WORDS += ["example", "com", "https://x.io/a?b=1", "好的", "客厅", "灯", "はい", "電気", "A"]
MARKS = [".", ".", "!", "?", "。", "！", "？", "；", "…", "……", "...", ",", "，", "、", ":"]
MARKS += ["“", "”", "「", "」", "(", ")", '"', "'", "*", "**", "-", "#", "1.", "[", "]", "【", "】"]
SPACES = [" ", " ", " ", "  ", "\n", "\n\n", "\t", "\u3000", "\u2028"]
CLUSTERS = ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇨🇳", "e\u0301", "❤\ufe0f"]
TAGS = ["[joy]", "[Wave]", "【开心】", "[OK]", "[unknown]", "[ joy ]", "[big smile]"]
TAGS += ["【a[joy]】", "[x【开心】]"]
THOUGHT = "ZQX"
VOCABULARY = frozenset({"joy", "wave", "开心", "big smile"})
KNOWN_TAG = re.compile(r"\[(?:joy|wave| joy |big smile)\]|【开心】", re.IGNORECASE)
NESTED = re.compile(r"【[^】\n]*\[|\[[^\]\n]*【")

PROFILE = settings(max_examples=int(os.environ.get("PIPELINE_EXAMPLES", "150")), deadline=None)

ATOM = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(WORDS),
    st.sampled_from(MARKS),
    st.sampled_from(SPACES),
    st.sampled_from(CLUSTERS),
)
TEXT = st.lists(ATOM, max_size=40).map("".join)
TAGGED_TEXT = st.lists(st.one_of(ATOM, st.sampled_from(TAGS)), max_size=40).map("".join)
CUTS = st.lists(st.integers(min_value=0, max_value=10_000), max_size=30)


def split(text: str, cuts: list[int]) -> list[str]:
    """Cut ``text`` at the given offsets."""
    points = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


def with_thoughts(chunks: list[str], every: int) -> list[OutputItem]:
    """Return the chunks as deltas with adapter thinking after every ``every``-th one."""
    items: list[OutputItem] = []
    for index, chunk in enumerate(chunks):
        items.append(delta(chunk))
        if every and index % every == 0:
            items.append(ThinkingDelta(text=f"{THOUGHT}{index}"))
    return items


def squash(text: str) -> str:
    """Return ``text`` without any whitespace."""
    return "".join(text.split())


def thinking(items: list[OutputItem]) -> str:
    """Return the thinking text that came out."""
    return "".join(item.text for item in items if isinstance(item, ThinkingDelta))


@PROFILE
@given(text=TAGGED_TEXT, cuts_a=CUTS, cuts_b=CUTS, show=st.booleans(), fast=st.booleans())
def test_any_chunking_gives_the_same_sentences(
    text: str, cuts_a: list[int], cuts_b: list[int], show: bool, fast: bool
) -> None:
    """Two chunkings of one reply give the same sentences and display text."""
    config = PipelineConfig(action_tags=VOCABULARY, show_thinking=show, faster_first_response=fast)
    pipeline = build_pipeline(config)
    chunks = split(text, cuts_a)
    one = run(pipeline, with_thoughts(chunks, 3))
    two = run(pipeline, split(text, cuts_b))
    assert sentences(one) == sentences(two)
    assert shown(one) == shown(two)
    thoughts = "".join(f"{THOUGHT}{index}" for index in range(0, len(chunks), 3))
    assert thinking(one) == (thoughts if show else "")


@PROFILE
@given(text=TEXT, cuts=CUTS, cap=st.sampled_from([16, 40, 200]))
def test_what_leaves_depends_on_the_text_so_far_alone(text: str, cuts: list[int], cap: int) -> None:
    """After each chunk, exactly the sentences its text so far decides have left.

    Fed whole or in pieces, a prefix releases the same sentences: an end waits for text
    that decides it, never for a chunk boundary.
    """
    config = PipelineConfig(max_sentence_chars=cap)
    divider = BoundaryScanner(config)
    released: list[str] = []
    seen = ""
    for chunk in split(text, cuts):
        released += divider.feed(chunk)
        seen += chunk
        assert BoundaryScanner(config).feed(seen) == released, seen


@PROFILE
@given(text=TAGGED_TEXT, cuts=CUTS, show=st.booleans())
def test_sentences_are_never_empty_and_never_leak_thinking(
    text: str, cuts: list[int], show: bool
) -> None:
    """Every sentence shows, says or does something; thinking is never shown inline or said."""
    out = run(
        build_pipeline(PipelineConfig(action_tags=VOCABULARY, show_thinking=show)),
        with_thoughts(split(text, cuts), 2),
    )
    assert THOUGHT not in shown(out)
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
    """Without tags, sentences and deltas each join to the reply, exactly (stripped)."""
    out = run(build_pipeline(), split(text, cuts))
    assert "".join(item.display_text for item in sentences(out)) == text.strip()
    assert shown(out) == text.strip()
    assert modelled(out) == text


@PROFILE
@given(text=TAGGED_TEXT, cuts=CUTS)
def test_display_text_is_the_reply_minus_tags(text: str, cuts: list[int]) -> None:
    """With tags, display text joins to the reply minus known tags, with every action.

    The cap is out of reach here: a cut inside a tag's name would make it text.
    """
    config = PipelineConfig(action_tags=VOCABULARY, max_sentence_chars=10_000)
    out = sentences(run(build_pipeline(config), split(text, cuts)))
    reference, actions = ActionTags(VOCABULARY).extract(text)
    assert squash("".join(item.display_text for item in out)) == squash(reference)
    assert tuple(action for item in out for action in item.actions) == actions
    if not NESTED.search(text):  # a bracket inside another: the regex oracle cannot tell
        assert squash(reference) == squash(KNOWN_TAG.sub("", text))


@PROFILE
@given(
    stretches=st.lists(TAGGED_TEXT, min_size=1, max_size=3),
    cuts=CUTS,
    cap=st.sampled_from([8, 9, 12, 16, 24, 40, 64, 200]),
    fast=st.booleans(),
)
def test_deltas_show_what_the_sentences_show_and_keep_the_model_text(
    stretches: list[str], cuts: list[int], cap: int, fast: bool
) -> None:
    """Per stretch: delta text joins to display text; all model text comes out, in order."""
    config = PipelineConfig(
        action_tags=VOCABULARY, max_sentence_chars=cap, faster_first_response=fast
    )
    call = ToolCallEvent(tool_id="t", tool_name="x", args={}, status="running")
    items: list[OutputItem] = []
    for index, text in enumerate(stretches):
        items.extend([call] if index else [])
        items.extend(delta(chunk) for chunk in split(text, cuts))
    parts: list[list[OutputItem]] = [[]]
    for item in run(build_pipeline(config), items):
        if item == call:
            parts.append([])
        else:
            parts[-1].append(item)
    for text, part in zip(stretches, parts, strict=True):
        assert shown(part) == "".join(item.display_text for item in sentences(part))
        assert modelled(part) == text


@PROFILE
@given(text=TEXT, cuts=CUTS)
def test_text_without_brackets_shows_before_the_next_token_is_pulled(
    text: str, cuts: list[int]
) -> None:
    """Every token shows at once but for its trailing whitespace (and the stretch's leading)."""
    text = text.replace("[", "(").replace("]", ")").replace("【", "(").replace("】", ")")
    chunks = split(text, cuts)
    released = [""] * (len(chunks) + 1)
    for pulled, item in trace(build_pipeline(PipelineConfig(action_tags=VOCABULARY)), chunks):
        if isinstance(item, TextDelta):
            released[pulled] += item.text
    for count in range(1, len(chunks) + 1):
        assert "".join(released[: count + 1]) == "".join(chunks[:count]).strip()


class Marker:
    """An item no stage knows, numbered."""

    def __init__(self, number: int) -> None:
        """Remember the number."""
        self.number = number


EVENT = st.one_of(
    st.integers(0, 99).map(
        lambda n: ToolCallEvent(tool_id=f"t{n}", tool_name="x", args={}, status="running")
    ),
    st.integers(0, 99).map(lambda n: cast(OutputItem, Marker(n))),
    st.integers(0, 99).map(lambda n: ThinkingDelta(text=f"adapter{n}")),
)


@PROFILE
@given(stream=st.lists(st.one_of(TEXT, EVENT), max_size=12), cuts=CUTS)
def test_structured_events_keep_their_order_and_text_stays_between_them(
    stream: list[str | OutputItem], cuts: list[int]
) -> None:
    """Events come out in input order; each stretch of text comes out between its events."""
    items: list[OutputItem] = []
    for item in stream:
        items.extend(map(delta, split(item, cuts)) if isinstance(item, str) else [item])
    out = run(build_pipeline(PipelineConfig(show_thinking=True)), items)

    def structured(seq: list[OutputItem]) -> list[OutputItem]:
        """Return the events, adapter thinking included."""
        return [item for item in seq if not isinstance(item, TextDelta | SentenceOutput)]

    assert structured(out) == structured(items)

    def stretches(seq: list[OutputItem], pick: type) -> list[str]:
        """Return the text between flush events (tool calls, unknown items)."""
        parts = [""]
        for item in seq:
            match item:
                case ThinkingDelta():
                    pass
                case TextDelta(text=text) if pick is TextDelta:
                    parts[-1] += text
                case SentenceOutput(display_text=text) if pick is SentenceOutput:
                    parts[-1] += text
                case TextDelta() | SentenceOutput():
                    pass
                case _:
                    parts.append("")
        return parts

    expected = [part.strip() for part in stretches(items, TextDelta)]
    assert stretches(out, SentenceOutput) == expected
    assert stretches(out, TextDelta) == expected


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
