"""What TTS says: each sentence's speakable text, and a reply's sentences joined."""

from __future__ import annotations

import pytest

from custom_components.companion_agent.engine.events import SentenceOutput
from custom_components.companion_agent.engine.pipeline import (
    PipelineConfig,
    build_pipeline,
    join_speech,
    speakable,
)
from custom_components.companion_agent.engine.pipeline.tts_filter import url_word

from .drive import chunkings, run, sentences


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
def test_speech_text_has_no_markdown_emoji_urls_asterisks_or_brackets(
    text: str, spoken: str
) -> None:
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


@pytest.mark.parametrize(
    ("text", "speech"),
    [
        ("好的。Okay.", "好的。Okay."),
        ("Hi. There.", "Hi. There."),
        (
            "好的，已经打开客厅的灯。需要我调暗一点吗？",
            "好的，已经打开客厅的灯。需要我调暗一点吗？",
        ),
        ("はい、つけました。ほかに何かありますか？", "はい、つけました。ほかに何かありますか？"),
        ("Sure. 电视已经打开了。Enjoy!", "Sure. 电视已经打开了。Enjoy!"),
        (
            "OK！我已经把 living room 的温度设为 24°C。Have a nice day!",
            "OK！我已经把 living room 的温度设为 24°C。Have a nice day!",
        ),
        ("Open windows:\n- Bedroom\n- Office", "Open windows: Bedroom Office"),
        ("Done! 🎉 Bye.", "Done! Bye."),
        ("好的。🎉Okay.", "好的。Okay."),
        ("[joy] Hi there! [wave] Bye.", "Hi there! Bye."),
    ],
)
def test_speech_keeps_the_models_own_spacing(text: str, speech: str) -> None:
    """Sentences join with a space exactly where the model put whitespace between them."""
    config = PipelineConfig(action_tags=frozenset({"joy", "wave"}))
    for chunks in chunkings(text):
        assert join_speech(sentences(run(build_pipeline(config), chunks))) == speech, chunks


def test_speech_skips_sentences_with_nothing_to_say() -> None:
    """Silent sentences add no text, only the whitespace they held."""
    spoken = [
        SentenceOutput(display_text="Hi.", tts_text="Hi."),
        SentenceOutput(display_text="", tts_text="", actions=("joy",)),
        SentenceOutput(display_text="🎉", tts_text=""),
        SentenceOutput(display_text="好。", tts_text="好。"),
        SentenceOutput(display_text=" 🎉", tts_text=""),
        SentenceOutput(display_text="Bye.", tts_text="Bye."),
    ]
    assert join_speech(spoken) == "Hi.好。 Bye."
    assert join_speech([]) == ""
