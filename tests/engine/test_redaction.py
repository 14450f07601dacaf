"""Secrets in free text: the forms a household writes them in, and the stream that never
cuts one apart.

The stream redactor's property, exactly: for any text of at most ``MAX_HELD`` characters
and any way of cutting it into chunks, the concatenation of what ``feed`` releases and
``flush`` returns equals ``scrub_text`` of the whole text. Checked by hypothesis over texts
made of labels, emphasis, separators, values and line breaks, and exhaustively (every split
in two, and a character at a time) over the sample texts below.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from custom_components.companion_agent.engine.redaction import (
    REDACTED,
    StreamRedactor,
    scrub_text,
)

PROFILE = settings(max_examples=int(os.environ.get("REDACTION_EXAMPLES", "400")), deadline=None)

MASKED = [
    ("**Wi-Fi password:** CorrectHorse42", "**Wi-Fi password:** ***"),
    ("**Wi-Fi password**: CorrectHorse42.", "**Wi-Fi password**: ***."),
    ("password:\nCorrectHorse42", "password:\n***"),
    ("Password:\n\n`CorrectHorse42`", "Password:\n\n`***`"),
    ("Password:\n```\nCorrectHorse42\n```", "Password:\n```\n***\n```"),
    ("The Wi-Fi password is CorrectHorse42.", "The Wi-Fi password is ***."),
    ("The password is:\n**CorrectHorse42**", "The password is:\n*******"),
    ("the PIN is 4711, then", "the PIN is ***, then"),
    ("Your lock code was 5150!", "Your lock code was ***!"),
    ("passcode = 0000", "passcode = ***"),
    ("- **Wi-Fi key:** `Zebra 99`", "- **Wi-Fi key:** `***`"),
    ("Network security key: Zebra99", "Network security key: ***"),
    ("api key: abc123xyz", "api key: ***"),
    ("my access token: abcdef", "my access token: ***"),
    ("| Wi-Fi password | CorrectHorse42 |", "| Wi-Fi password | *** |"),
    ("__passcode__ = _my_pass_123_", "__passcode__ = _***_"),
    ("password: **correct horse battery staple**", f"password: **{REDACTED}**"),
    ("password:\ntoken: abc", "password:\ntoken: ***"),
    ("密码是CorrectHorse42。", "密码是***。"),
    ("Wi-Fi密码：CorrectHorse42，记住", "Wi-Fi密码：***，记住"),
    ("门锁密码为 5150", "门锁密码为 ***"),
    ("PIN码：4711", "PIN码：***"),
    ("他说key是sk-proj-Zq81VbN3mXk0Lp4R", "他说key是***"),
    ("Server=db;User Id=sa;Password=hunter2;", "Server=db;User Id=sa;Password=***;"),
    ('"api_key": "x y"', '"api_key": "***"'),
    ("the graph is bolt://neo4j:hunter22@graph:7687", "the graph is bolt://***@graph:7687"),
    ("相机rtsp://admin:pw1234@cam.lan/live", "相机rtsp://***@cam.lan/live"),
]
KEPT = [
    "The password is not set.",
    "The password is in the drawer.",
    "用户问Wi-Fi密码是多少。",
    "weather_code: 3, country code: US",
    "The status code is 200.",
    "This is basic\nstuff",
    "Think about it: the light is on.",
]


@pytest.mark.parametrize(("text", "shown"), MASKED)
def test_a_secret_in_any_common_form_is_masked(text: str, shown: str) -> None:
    """Labels in Markdown, in sentences, in Chinese, in tables, with the value lines later."""
    assert scrub_text(text) == shown


@pytest.mark.parametrize("text", KEPT)
def test_words_about_a_secret_are_not_taken_for_it(text: str) -> None:
    """A sentence about a password, a weather code, ``多少``: left as they are."""
    assert scrub_text(text) == text


def streamed(chunks: list[str]) -> str:
    """Feed ``chunks`` to a fresh stream redactor; return all it released and flushed."""
    redactor = StreamRedactor()
    return "".join([*(redactor.feed(chunk) for chunk in chunks), redactor.flush()])


def test_a_line_ending_in_a_label_waits_for_its_value() -> None:
    """The issue's stream: ``password:`` then, after a line break, its value in a chunk of
    its own; the label's line is held until the value is seen, then both go out masked."""
    redactor = StreamRedactor()
    assert redactor.feed("Checking the router.\n**Wi-Fi password:**\n") == "Checking the router.\n"
    assert redactor.feed("Correct") == ""
    assert redactor.feed("Horse42\nNow the lights.") == "**Wi-Fi password:**\n***\n"
    assert redactor.flush() == "Now the lights."


def test_what_waits_is_bounded() -> None:
    """A value's line that never ends holds no more than ``MAX_HELD`` characters; the
    label goes out with its value masked all the same."""
    redactor = StreamRedactor()
    out = redactor.feed("password:\n")
    for _ in range(100):
        out += redactor.feed("word " * 10)
    assert out.startswith("password:\n*** word word")
    assert len(redactor.flush()) <= StreamRedactor.MAX_HELD


SAMPLES = [
    *(text for text, _ in MASKED),
    *KEPT,
    "Let me think. The user wants the Wi-Fi.\n**Wi-Fi password:**\n\nCorrectHorse42\nDone.",
    "Notes:\n- **PIN:** `4711`\n- **Lock code**:\n  5150\n- Country code: US。密码：\n芝麻开门！",
    "Header Bearer gho_16charsOfTokenAbcd. Then password is hunter2x9. OK!\nthe token is\n\nxyz",
    "password: \"a. b\" and password: 'x\ny' and 密码是abc。def；password:\n\n\n\nlate",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_every_split_in_two_and_every_character_alone_is_scrubbed_as_the_whole(text: str) -> None:
    """Exhaustive over the samples: the cut anywhere, or a chunk per character."""
    whole = scrub_text(text)
    for at in range(len(text) + 1):
        assert streamed([text[:at], text[at:]]) == whole, at
    assert streamed(list(text)) == whole


LABELS = ["password", "Wi-Fi password", "PIN", "api key", "the code", "token", "passcode"]
LABELS += ["密码", "门锁密码", "country code", "weather", "Password", "lock code", "x"]
MARKS = ["", "**", "`", "_", "__", "*", '"']
SEPARATORS = [":", ": ", " is ", " was ", "是", "为", " = ", " | ", ":\n", ":\n\n", " is:\n"]
SEPARATORS += [":\n\n\n", "：", ":\n- ", ":\n```\n", ": **", "=", " is not "]
VALUES = ["CorrectHorse42", "Zebra 99", "not", "4711", "sk-proj-Zq81VbN3mXk0Lp4R", "多少"]
VALUES += ["bolt://neo4j:hunter22@graph:7687", "a.b", "x", "abc:", "token: y", "***"]
FILLER = ["The ", ". ", "\n", "\n\n", "。", " and ", "ok", "!", "? ", " ", "；", ",", "Bearer "]
FILLER += ["is", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2lnbmF0dXJlMQ", "e.g. ", "$"]

PIECE = st.one_of(
    st.tuples(
        st.sampled_from(MARKS),
        st.sampled_from(LABELS),
        st.sampled_from(MARKS),
        st.sampled_from(SEPARATORS),
        st.sampled_from(MARKS),
        st.sampled_from(VALUES),
        st.sampled_from(MARKS),
    ).map("".join),
    st.sampled_from(FILLER),
    st.sampled_from(VALUES),
)
TEXTS = st.lists(PIECE, max_size=24).map("".join)


@PROFILE
@given(text=TEXTS, data=st.data())
def test_any_chunking_of_a_text_is_scrubbed_as_the_whole_text(
    text: str, data: st.DataObject
) -> None:
    """The property: chunks cut anywhere, released clause by clause, equal the whole scrubbed."""
    assert len(text) <= StreamRedactor.MAX_HELD
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert streamed(chunks) == scrub_text(text)
