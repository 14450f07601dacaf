"""BoundaryScanner: where sentences end, and that no chunking changes it."""

from __future__ import annotations

import pytest

from custom_components.companion_agent.engine.pipeline import BoundaryScanner, PipelineConfig

from .drive import chunkings, divide

CASES: list[tuple[str, list[str]]] = [
    # English terminators; short sentences are never merged.
    ("The light is on. OK. Done!", ["The light is on.", " OK.", " Done!"]),
    ("Is it on? Yes!", ["Is it on?", " Yes!"]),
    ("Really?! Wow.", ["Really?!", " Wow."]),
    # Decimals, times, versions, URLs, e-mail.
    ("Pi is 3.14 today. It is 10.30 now.", ["Pi is 3.14 today.", " It is 10.30 now."]),
    ("Update to v2.1.3 first. Then restart.", ["Update to v2.1.3 first.", " Then restart."]),
    (
        "See https://www.home-assistant.io/docs?x=1&y=2. Then go.",
        ["See https://www.home-assistant.io/docs?x=1&y=2.", " Then go."],
    ),
    ("Mail me at a.b@example.com today. Bye.", ["Mail me at a.b@example.com today.", " Bye."]),
    ("It costs $3. Cheap.", ["It costs $3.", " Cheap."]),
    # Abbreviations.
    ("Mr. Smith and Dr. Who met. Fine.", ["Mr. Smith and Dr. Who met.", " Fine."]),
    (
        "Use fruit, e.g. apples, i.e. red ones. Good.",
        ["Use fruit, e.g. apples, i.e. red ones.", " Good."],
    ),
    ("He lives in the U.S. now. I do too.", ["He lives in the U.S. now.", " I do too."]),
    ("He lives in the U.S. Then he moved.", ["He lives in the U.S.", " Then he moved."]),
    ("Apples, pears, etc. are fruit. Yes.", ["Apples, pears, etc. are fruit.", " Yes."]),
    ("Wake me at 7 a.m. tomorrow. Thanks.", ["Wake me at 7 a.m. tomorrow.", " Thanks."]),
    ("It ends at 5 p.m. Then we eat.", ["It ends at 5 p.m.", " Then we eat."]),
    ("Room No. 5 is free. No. It is not.", ["Room No. 5 is free.", " No.", " It is not."]),
    ("Ask J. K. Rowling. She knows.", ["Ask J. K. Rowling.", " She knows."]),
    # An ellipsis ends a sentence before a capital or CJK text, else it is a pause.
    ("Well... I think so. Yes.", ["Well...", " I think so.", " Yes."]),
    ("Hmm... Let me check.", ["Hmm...", " Let me check."]),
    ("Wait...What? No.", ["Wait...", "What?", " No."]),
    ("Hmm… maybe. Sure.", ["Hmm… maybe.", " Sure."]),
    ("I was... thinking about it.", ["I was... thinking about it."]),
    ("Loading... 50% done.", ["Loading... 50% done."]),
    ("Really...? Yes.", ["Really...?", " Yes."]),
    ("...And then it stopped. OK.", ["...And then it stopped.", " OK."]),
    ("Off.\n... Then on.", ["Off.", "\n... Then on."]),
    ("Off. ... Then on.", ["Off. ...", " Then on."]),
    ("嗯……让我想想。好的。", ["嗯……", "让我想想。", "好的。"]),
    ("让我想想……明天…", ["让我想想……", "明天…"]),
    ("嗯...好吧。", ["嗯...", "好吧。"]),
    ("嗯……，好吧。", ["嗯……，好吧。"]),
    ("“好的……”然后走了。", ["“好的……”", "然后走了。"]),
    ("Hmm... 让我看看。OK… the light.", ["Hmm...", " 让我看看。", "OK… the light."]),
    # Chinese and Japanese, no spaces, released at the mark itself.
    (
        "好的，已经打开客厅的灯。需要我调暗一点吗？",
        ["好的，已经打开客厅的灯。", "需要我调暗一点吗？"],
    ),
    ("太好了！明天见；晚安。", ["太好了！", "明天见；", "晚安。"]),
    (
        "はい、電気をつけました。ほかに何かありますか？",
        ["はい、電気をつけました。", "ほかに何かありますか？"],
    ),
    ("半角｡句点です．終わり", ["半角｡", "句点です．", "終わり"]),
    # Closing quotes and brackets stay with their sentence.
    ("他说：“你好！”然后走了。", ["他说：“你好！”", "然后走了。"]),
    ("「はい。」と言った。", ["「はい。」", "と言った。"]),
    ('He said "Hello." Then he left.', ['He said "Hello."', " Then he left."]),
    ("(See the manual.) It helps.", ["(See the manual.)", " It helps."]),
    ("**Done.** Next step.", ["**Done.**", " Next step."]),
    (
        "It is called 'Movie night.' Should I add it?",
        ["It is called 'Movie night.'", " Should I add it?"],
    ),
    ("'Well...' I said.", ["'Well...'", " I said."]),
    ("(Ask 'Why?') Then wait.", ["(Ask 'Why?')", " Then wait."]),
    ('He said: Yes!" Then.', ['He said: Yes!"', " Then."]),
    # Apostrophes and opening quotes right after a mark are no closers.
    ("The U.S.'s flag. It's 'ok.' Fine.", ["The U.S.'s flag.", " It's 'ok.'", " Fine."]),
    ("'Stop!', he said. OK.", ["'Stop!', he said.", " OK."]),
    ('Done."Next" is here. More.', ['Done."Next" is here.', " More."]),
    ("它叫'电影之夜.'要加上吗?", ["它叫'电影之夜.'", "要加上吗?"]),
    ('好的."明天"见。好。', ["好的.", '"明天"见。', "好。"]),
    # Mixed language.
    ("Done.好的。OK!", ["Done.", "好的。", "OK!"]),
    (
        "已经打开 kitchen light 了。Anything else?",
        ["已经打开 kitchen light 了。", "Anything else?"],
    ),
    ("好的!我来开灯?", ["好的!", "我来开灯?"]),
    ("版本是3.5。好的。", ["版本是3.5。", "好的。"]),
    # Newlines and markdown lists.
    ("Options:\n1. Kitchen\n2. Hall", ["Options:", "\n1. Kitchen", "\n2. Hall"]),
    ("Here:\n- one\n- two\n\nDone", ["Here:", "\n- one", "\n- two", "\n\nDone"]),
    ("Line one \t\nLine two", ["Line one", " \t\nLine two"]),
    ("1. Turn on the light. 2. Dim it.", ["1. Turn on the light.", " 2. Dim it."]),
    # Emoji that only trail the last sentence (or its line) belong to it; before more
    # text they start the next one. A full-width mark decides at once: its emoji do not.
    ("Great job! 🎉", ["Great job! 🎉"]),
    ("Done! 👨\u200d👩\u200d👧 🇨🇳 👍🏽 ❤\ufe0f", ["Done! 👨\u200d👩\u200d👧 🇨🇳 👍🏽 ❤\ufe0f"]),
    ("Done! 🎉 Next thing.", ["Done!", " 🎉 Next thing."]),
    ("Great!🎉 More.", ["Great!", "🎉 More."]),
    ("Done! 🎉! Next.", ["Done! 🎉!", " Next."]),
    ("Lights off! ✅\nAnything else?", ["Lights off! ✅", "\nAnything else?"]),
    ('"Have fun!" 🎉', ['"Have fun!" 🎉']),
    ("It ends at 5 p.m. 🎉", ["It ends at 5 p.m. 🎉"]),
    ("It ends at 5 p.m. 🎉 Then we eat.", ["It ends at 5 p.m.", " 🎉 Then we eat."]),
    ("Room No. 🎉", ["Room No. 🎉"]),
    ("Done! 1\ufe0f\u20e3", ["Done!", " 1\ufe0f\u20e3"]),
    ("灯已经关了. 🌙", ["灯已经关了. 🌙"]),
    ("晚安... 🌙 明天见。", ["晚安...", " 🌙 明天见。"]),
    ("晚安！😊", ["晚安！", "😊"]),
    # Edges: leading and trailing whitespace of the stretch.
    ("  \n Hello there.  \n ", ["Hello there."]),
    ("", []),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_each_case_splits_the_same_however_it_is_chunked(text: str, expected: list[str]) -> None:
    """Each case splits as expected whether it arrives whole, by character or in pieces."""
    for chunks in chunkings(text):
        assert divide(chunks) == expected, chunks


@pytest.mark.parametrize(
    ("chunk", "released"),
    [
        ("好的，已经打开客厅的灯。", ["好的，已经打开客厅的灯。"]),
        ("需要吗？", ["需要吗？"]),
        ("好的!", ["好的!"]),
        ("「はい。」", ["「はい。」"]),
        ('他说"好的！"', ['他说"好的！"']),
        ("太好了！🎉", ["太好了！"]),
        ("Line one!\n", ["Line one!"]),
        ("Line one\n", ["Line one"]),
    ],
)
def test_unambiguous_boundary_releases_with_its_own_token(chunk: str, released: list[str]) -> None:
    """An end nothing after it can change releases in the same feed, no lookahead."""
    divider = BoundaryScanner()
    assert divider.feed(chunk) == released


@pytest.mark.parametrize(
    ("first", "rest", "released"),
    [
        ("The light is on.", " N", ["The light is on."]),
        ("Is it on?", "\n", ["Is it on?"]),
        ("Pi is 3.", "1", []),
        ("See example.", "c", []),
        ("Really?", "!", []),
        ("Really?!", " W", ["Really?!"]),
        ('He said "Yes!', '" T', ['He said "Yes!"']),
        ('He said "Yes!"', ",", []),
        ("Mr.", " S", []),
        ("Fruit etc.", " T", ["Fruit etc."]),
        ("Done!", " 🎉 🎊 N", ["Done!"]),
        ("灯关了.", "晚", ["灯关了."]),
        ("灯关了.", ".", []),
        ("让我想想……", "明", ["让我想想……"]),
        ("Hmm...", " L", ["Hmm..."]),
    ],
)
def test_ascii_mark_waits_for_the_text_that_decides_it(
    first: str, rest: str, released: list[str]
) -> None:
    """After ASCII ``.!?`` or an ellipsis nothing leaves before the text that decides.

    That is the next character, past whitespace and emoji (they may trail the sentence):
    ``!`` or a quote may still follow ``?``, a comma a closing quote. A dot right after
    CJK waits too, since it may begin ``...``.
    """
    divider = BoundaryScanner()
    assert divider.feed(first) == []
    for char in rest[:-1]:
        assert divider.feed(char) == [], char
    assert divider.feed(rest[-1]) == released


def test_abbreviation_waits_only_for_the_next_word() -> None:
    """``etc.`` and friends wait past the space for the next word's first letter."""
    divider = BoundaryScanner()
    assert divider.feed("Fruit etc.   ") == []
    assert divider.feed("T") == ["Fruit etc."]
    assert divider.flush() == "   T"


def test_ellipsis_waits_only_for_the_next_word() -> None:
    """After an ellipsis and whitespace, the next word's first letter decides."""
    divider = BoundaryScanner()
    assert divider.feed("Hmm...   ") == []
    assert divider.feed("L") == ["Hmm..."]
    assert divider.feed("et me... think… ") == []
    assert divider.feed("about it") == []
    assert divider.flush() == "   Let me... think… about it"


def test_faster_first_response_cuts_first_sentence_at_comma() -> None:
    """Only the first sentence may end at a comma, and only once it is long enough."""
    config = PipelineConfig(faster_first_response=True, first_clause_min_chars=8)
    text = "Sure, I will turn on the kitchen light, then the hall, and the porch."
    assert divide([text], config) == [
        "Sure, I will turn on the kitchen light,",
        " then the hall, and the porch.",
    ]
    assert divide(["好的，马上为你打开客厅的灯，然后关掉卧室的灯。"], config) == [
        "好的，马上为你打开客厅的灯，",
        "然后关掉卧室的灯。",
    ]
    assert divide(["It is 1,000 watts, quite a lot."], config) == [
        "It is 1,000 watts,",
        " quite a lot.",
    ]
    assert divide(["Sure, I will turn on the light."]) == ["Sure, I will turn on the light."]


def test_faster_first_comma_releases_at_once_for_wide_comma() -> None:
    """A full-width comma in the first sentence releases in the same feed."""
    divider = BoundaryScanner(PipelineConfig(faster_first_response=True, first_clause_min_chars=4))
    assert divider.feed("好的好的，") == ["好的好的，"]
    assert divider.feed("我来，") == []


def test_hard_cap_cuts_at_best_break() -> None:
    """Over the cap, cut at the last clause mark, else the last space, else anywhere safe."""
    config = PipelineConfig(max_sentence_chars=40)
    words = "one two three four five six seven eight nine ten eleven twelve"
    out = divide([words], config)
    assert all(len(s) <= 40 for s in out)
    assert "".join(out) == words
    assert all(not s.strip().startswith(("e ", "n ")) for s in out)
    clause = "alpha beta gamma delta, epsilon zeta eta theta iota kappa"
    assert divide([clause], config)[0] == "alpha beta gamma delta,"
    early = "alpha, beta gamma delta epsilon zeta eta theta iota kappa"
    assert divide([early], config)[0] == "alpha, beta gamma delta epsilon zeta eta"
    wide = "一二三四五六七八九十" * 3
    assert divide([wide + "，" + wide], config)[0] == wide + "，"
    solid = "字" * 100
    assert divide([solid], config) == ["字" * 40, "字" * 40, "字" * 20]


@pytest.mark.parametrize(
    "cluster",
    ["👨\u200d👩\u200d👧\u200d👦", "👍🏽", "🇨🇳", "e\u0301", "❤\ufe0f", "1\ufe0f\u20e3"],
)
def test_hard_cap_never_splits_a_grapheme_cluster(cluster: str) -> None:
    """Emoji sequences, flags, skin tones and combining marks survive a forced cut."""
    config = PipelineConfig(max_sentence_chars=16)
    text = cluster * 40
    for chunks in chunkings(text):
        out = divide(chunks, config)
        assert "".join(out) == text
        assert all(len(s) % len(cluster) == 0 and s.startswith(cluster[0]) for s in out)


def test_cost_is_linear_without_punctuation() -> None:
    """A long unpunctuated stream is cut by the cap with bounded buffering."""
    divider = BoundaryScanner()
    text = "lorem ipsum dolor sit amet " * 2000
    out: list[str] = []
    for i in range(0, len(text), 4):
        out.extend(divider.feed(text[i : i + 4]))
        assert len(divider._buf) <= 200 + 4
    assert "".join(out) + (divider.flush() or "") == text.rstrip()


def test_long_whitespace_run_under_the_cap_never_stalls() -> None:
    """A whitespace run longer than half the cap is dropped; the rest comes out whole."""
    config = PipelineConfig(max_sentence_chars=18)
    text = "Go." + " " * 12 + "abcdefghijklmnopqrstuvwxyz"
    for chunks in chunkings(text):
        out = divide(chunks, config)
        assert "".join(out).replace(" ", "") == text.replace(" ", "")
        assert all(s.strip() and len(s) <= 18 for s in out)
