"""The ``tts_filter`` stage: the text Piper reads.

From each sentence's ``tts_text``: markdown images and links keep their words; a URL
becomes one short word (``url_word``, else by script: link / 链接 / リンク / 링크); HTML-like
tags (a stray ``</think>``), emoji (whole clusters: ZWJ sequences, skin tones, flags,
keycaps, variation selectors), markdown markers (headings, bullets, quotes, rules,
emphasis, code, tables), asterisks and brackets of every width are removed, the words
inside brackets stay; underscores become spaces; whitespace collapses to one space;
punctuation left dangling at the start (``！`` after ``？``) is dropped. A result without
a letter or digit is empty.

An empty result is never spoken. A sentence that still has display text or actions goes
on with ``tts_text == ""`` (the speaker skips it; the display and actions still need it);
a sentence with nothing to show, say or do produces no ``SentenceOutput`` at all.
Thinking is never in ``tts_text``; ``TextDelta``, ``ThinkingDelta`` and other items pass
through.

``join_speech`` joins a reply's sentences into what is said, with a space exactly where
the model wrote whitespace between two sentences (``好的。Okay.`` stays unspaced).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable

from ..chars import is_han, is_hangul, is_kana
from ..events import OutputItem, SentenceOutput
from .stage import DEFAULT_CONFIG, PipelineConfig, Stage

_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\s]*\)")
_URL = re.compile(r"(?:https?://|\bwww\.)[^\s<>\"'`，。！？、；）」』】]+", re.IGNORECASE)
_URL_TAIL = ".,;:!?)]}'\""
_HTML_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>\n]{0,80})?/?>")
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u2300-\u23ff\u2190-\u21ff"
    "\u25a0-\u25ff\ufe0e\ufe0f\u200d\u20e3\U000e0020-\U000e007f"
    "\u3030\u303d\u3297\u3299\u00a9\u00ae\u203c\u2049\u2122\u2139]+"
)
_RULE = re.compile(r"(?m)^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LINE_MARKUP = re.compile(r"(?m)^[ \t]*(?:#{1,6}[ \t]+|>[ \t]?|[-*+•][ \t]+)")
_SPACED = re.compile(r"[|_\t]")
_MARKS = re.compile(r"[*#`~～〜^\\\[\](){}【】（）「」『』《》〈〉〔〕［］｛｝]")
_NEEDS_WORK = re.compile(
    r"[\[\]()<>*#`|~^_\\{}【】（）「」『』《》〈〉〔〕［］｛｝～〜\u2000-\u2bff\u00a9\u00ae"
    r"\u3030\u303d\u3297\u3299\ufe0e\ufe0f\U0001f000-\U0001faff\U000e0020-\U000e007f]"
    r"|://|www\.|^\s*[-+]",
    re.IGNORECASE,
)
_WORD_CHAR = re.compile(r"[^\W_]")
_SPACE_BEFORE_MARK = re.compile(r" +(?=[.,!?;:。！？；，、])")
_DANGLING = " .,!?;:。！？；，、…)]}）」』】”’\"'—"


def url_word(text: str) -> str:
    """Return the word TTS says for a URL in ``text``, by its script."""
    if any(is_kana(char) for char in text):
        return "リンク"
    if any(is_hangul(char) for char in text):
        return "링크"
    if any(is_han(char) for char in text):
        return "链接"
    return "link"


def speakable(text: str, word: str | None = None) -> str:
    """Return what TTS should say for ``text``; ``""`` if nothing is worth saying."""
    if _NEEDS_WORK.search(text):
        text = _SPACE_BEFORE_MARK.sub("", " ".join(_strip_markup(text, word).split()))
    else:
        text = " ".join(text.split())
    text = text.lstrip(_DANGLING)
    return text if _WORD_CHAR.search(text) else ""


def _strip_markup(text: str, word: str | None) -> str:
    """Remove links, URLs, tags, emoji, markdown, asterisks and brackets from ``text``."""
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    if _URL.search(text):
        spoken = word or url_word(text)

        def _replace(found: re.Match[str]) -> str:
            """Say the word for the URL and keep the punctuation that followed it."""
            url = found.group()
            core = url.rstrip(_URL_TAIL)
            return f" {spoken}{url[len(core) :]}"

        text = _URL.sub(_replace, text)
    text = _HTML_TAG.sub(" ", text)
    text = _EMOJI.sub("", text)
    text = _RULE.sub("", text)
    text = _LINE_MARKUP.sub("", text)
    text = _SPACED.sub(" ", text)
    return _MARKS.sub("", text)


def tts_filter(config: PipelineConfig = DEFAULT_CONFIG) -> Stage:
    """Return the stage that makes each sentence's ``tts_text`` speakable."""
    word = config.url_word

    async def apply(stream: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Clean sentences for speech, drop empty ones; pass everything else through."""
        async for item in stream:
            match item:
                case SentenceOutput(display_text=display, tts_text=tts, actions=actions):
                    spoken = speakable(tts, word)
                    if not (spoken or display.strip() or actions):
                        continue
                    if spoken == tts:
                        yield item
                    else:
                        yield SentenceOutput(display_text=display, tts_text=spoken, actions=actions)
                case _:
                    yield item

    return Stage(name="tts_filter", apply=apply)


def join_speech(sentences: Iterable[SentenceOutput]) -> str:
    """Join the sentences' speech, spaced where the model put whitespace between them."""
    spoken: list[str] = []
    spaced = False
    for sentence in sentences:
        display = sentence.display_text
        if not sentence.tts_text:
            spaced = spaced or any(char.isspace() for char in display)
            continue
        if spoken and (spaced or display[:1].isspace()):
            spoken.append(" ")
        spoken.append(sentence.tts_text)
        spaced = display[-1:].isspace()
    return "".join(spoken)
