"""What TTS says: each sentence's speakable text."""

from __future__ import annotations

import pytest

from custom_components.companion_agent.engine.pipeline import speakable
from custom_components.companion_agent.engine.pipeline.tts_filter import url_word


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


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("see", "link"),
        ("ここを見て", "リンク"),
        ("여기를 보세요", "링크"),
        ("请看", "链接"),
        ("㐂看", "链接"),
        ("漢字とかな", "リンク"),
    ],
)
def test_url_word_follows_the_script(text: str, word: str) -> None:
    """Kana says リンク, hangul 링크, any CJK ideograph 链接, anything else link."""
    assert url_word(text) == word
