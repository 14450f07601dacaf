"""The one text cleaner: valid text, cut only between grapheme clusters; the CJK predicate."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from custom_components.companion_agent.engine.chars import (
    clean_text,
    cut_text,
    is_cjk_letter,
    valid_text,
)

_MARKS = st.sampled_from(["\u0301", "\u0308", "\u20e3", "\ufe0f", "\U0001f3fd", "\u093f"])
_BASES = st.sampled_from(["a", "Z", "7", " ", "猫", "こ", "한", "😀", "👍", "𝒜", "\n"])
_FLAGS = st.sampled_from(["🇬🇧", "🇨🇳", "🇺🇸"])
_FAMILY = "👨\u200d👩\u200d👧"
_SCOTLAND = "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"


@st.composite
def _cluster(draw: st.DrawFn) -> str:
    """Draw one grapheme cluster: a base and its marks, a flag, a ZWJ or tag sequence."""
    kind = draw(st.sampled_from(["base", "flag", "family", "tags"]))
    if kind == "flag":
        return draw(_FLAGS)
    if kind == "family":
        return _FAMILY
    if kind == "tags":
        return _SCOTLAND
    return draw(_BASES) + "".join(draw(st.lists(_MARKS, max_size=3)))


_CLUSTERS = st.lists(_cluster(), max_size=30)


def _boundaries(clusters: list[str]) -> set[int]:
    """Return every index of the joined clusters that falls between two of them."""
    ends, at = {0}, 0
    for cluster in clusters:
        at += len(cluster)
        ends.add(at)
    return ends


@given(_CLUSTERS, st.integers(min_value=0, max_value=120), st.sampled_from(["", "…", " [cut]"]))
def test_a_cut_keeps_the_most_whole_clusters_that_fit(
    clusters: list[str], limit: int, marker: str
) -> None:
    """The head is the longest run of whole clusters that leaves room for the marker."""
    text = "".join(clusters)
    cut = cut_text(text, limit, marker=marker)
    assert len(cut) <= limit
    if len(text) <= limit:
        assert cut == text
        return
    if len(marker) > limit:
        marker = ""  # no room for the marker: the head alone
    assert cut.endswith(marker)
    head = cut[: len(cut) - len(marker)]
    assert text.startswith(head)
    assert len(head) == max(end for end in _boundaries(clusters) if end <= limit - len(marker))


@given(_CLUSTERS, st.integers(min_value=0, max_value=120))
def test_clean_text_never_splits_a_cluster_either(clusters: list[str], limit: int) -> None:
    """The cleaner cuts as ``cut_text`` does: at a cluster boundary, within the limit."""
    text = "".join(clusters)
    cleaned = clean_text(text, limit)
    assert len(cleaned) <= limit
    assert len(cleaned) in _boundaries(clusters)


_PIECES = st.one_of(
    st.text(max_size=3),
    st.sampled_from(["\ud83d\ude00", "\ud835\udc9c"]),  # a pair as two halves: 😀, 𝒜
    st.sampled_from(["\ud83d", "\ude00", "\udfff"]),  # a half alone
)


@given(st.lists(_PIECES, max_size=20), st.integers(min_value=0, max_value=40))
def test_a_surrogate_pair_is_joined_and_never_cut_in_half(pieces: list[str], limit: int) -> None:
    """Pairs become their character before the cut; lone halves become U+FFFD; all encodes."""
    text = "".join(pieces)
    cleaned = clean_text(text, limit)
    cleaned.encode("utf-8")  # no surrogate left
    assert len(cleaned) <= limit
    assert valid_text(text).startswith(cleaned)  # cut after joining, so no pair was halved


def test_a_cut_falls_before_the_accent_the_letter_carries() -> None:
    """``text[:limit]`` would leave the ``e`` without its accent; the cut takes neither."""
    assert cut_text("cafe\u0301 noir", 4) == "caf"
    assert cut_text("cafe\u0301 noir", 5) == "cafe\u0301"
    assert cut_text("go 🇬🇧🇨🇳", 6, marker="…") == "go 🇬🇧…"
    assert cut_text(_FAMILY * 2, 7) == _FAMILY
    assert cut_text("short", 5, marker="…") == "short"


def test_trim_and_one_line_shape_the_text_before_the_cut() -> None:
    """``trim`` strips the ends (the head's too); ``one_line`` also folds white space."""
    assert clean_text("  a  b\n\nc  ", 100, trim=True) == "a  b\n\nc"
    assert clean_text("  a  b\n\nc  ", 100, one_line=True) == "a b c"
    assert clean_text("one two three", 8, trim=True) == "one two"
    assert clean_text("one two three", 8) == "one two "
    assert clean_text("one two three", 9, marker="…", one_line=True) == "one two…"
    assert clean_text("x\ud800y", 10) == "x\ufffdy"


def test_cjk_letters_are_wide_letters_and_digits_not_wide_marks() -> None:
    """Han, kana, hangul and full-width digits are CJK text; 。 and ！ are marks."""
    assert all(is_cjk_letter(char) for char in "猫こカ한１")
    assert not any(is_cjk_letter(char) for char in "。！、a1 😀")
