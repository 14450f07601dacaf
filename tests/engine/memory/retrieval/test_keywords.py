"""Keyword segmentation: CJK runs as characters and bigrams, Latin words folded; questions."""

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from custom_components.companion_agent.engine.memory.retrieval.keywords import (
    MAX_QUERY_TERMS,
    asks,
    match_expression,
    query_terms,
    segment,
)


def test_stored_text_keeps_characters_and_bigrams() -> None:
    """Test that a Han run becomes each character and each overlapping pair."""
    assert segment("我喜欢猫") == "我 我喜 喜 喜欢 欢 欢猫 猫"


def test_latin_words_are_folded() -> None:
    """Test NFKC and case folding: full-width and capitals read as plain lower case."""
    assert segment("ＷｉＦｉ Password, STRASSE straße!") == "wifi password strasse strasse"


def test_scripts_split_where_they_meet() -> None:
    """Test that a mixed run splits into its Latin and CJK parts."""
    assert segment("在Starbucks买latte") == "在 starbucks 买 latte"
    assert query_terms("在Starbucks买latte") == ["在", "starbucks", "买", "latte"]


def test_queries_use_bigrams_and_lone_characters() -> None:
    """Test that a query matches pairs for longer runs and the character alone for one."""
    assert query_terms("猫") == ["猫"]
    assert query_terms("咖啡") == ["咖啡"]
    assert query_terms("喝咖啡") == ["喝咖", "咖啡"]
    assert query_terms("Cats and 猫, cats") == ["cats", "and", "猫"]


def test_kana_and_hangul_are_cjk() -> None:
    """Test that Japanese and Korean runs are segmented like Chinese."""
    assert query_terms("ねこ") == ["ねこ"]
    assert query_terms("고양이") == ["고양", "양이"]


def test_a_query_of_no_words_has_no_expression() -> None:
    """Test that punctuation alone gives no MATCH expression."""
    assert match_expression(" ?!，。 ") is None
    assert match_expression("_") is None


def test_a_long_query_is_bounded() -> None:
    """Test that a query yields at most MAX_QUERY_TERMS terms."""
    assert len(query_terms(" ".join(f"w{n}" for n in range(500)))) == MAX_QUERY_TERMS


DB = sqlite3.connect(":memory:")
DB.execute("CREATE VIRTUAL TABLE t USING fts5(terms, tokenize='porter unicode61')")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_text_makes_a_valid_fts5_query(text: str) -> None:
    """Test that whatever the text, its terms store and its expression parses in FTS5.

    The text is stored too: any text's query finds the text itself (it has a term).
    """
    valid = text.encode("utf-8", "replace").decode()
    DB.execute("DELETE FROM t")
    DB.execute("INSERT INTO t VALUES (?)", (segment(valid),))
    expression = match_expression(valid)
    if expression is not None:
        rows = DB.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expression,)).fetchone()
        assert rows[0] == 1


@pytest.mark.parametrize(
    ("text", "asking"),
    [
        ("What do you do to relax?", True),
        ("you coming tonight ?", True),
        ("你吃饭了吗", True),
        ("你在做什么。", True),
        ("那你呢！", True),
        ("周末去哪里？", True),
        ("Anna is allergic to shellfish", False),
        ("I wonder what she wants", False),
        ("我吃过了", False),
        ("", False),
    ],
)
def test_asks_tells_a_question_from_a_statement(text: str, asking: bool) -> None:
    """A question mark (either width) or 吗 / 呢 / 么 at the end asks; nothing else does."""
    assert asks(text) is asking
