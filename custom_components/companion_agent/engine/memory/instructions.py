"""Lasting instructions: "from now on…", "以后…", "remember that…", "记住…".

The person asking the companion to keep something in mind must not depend on a model
answering well: the matcher is small, multilingual and model-free, and the person's own
sentence is written as the conclusion under a topic taken from the words after the cue
(the first two words, or the first two characters of Chinese or Japanese). Extraction may
refine it later; a later instruction on the same topic supersedes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..chars import clean_text, cut_text, is_wide, strip_format

MAX_INSTRUCTION_CHARS = 500
_ANYWHERE = (
    r"from now on",
    r"from here on(?: out)?",
    r"going forward",
    r"ab jetzt",
    r"von nun an",
    r"à partir de maintenant",
    r"a partir de ahora",
)
"""Cues that mean a standing request wherever they stand in a sentence."""
_SENTENCE_START = (
    r"(?:please )?remember(?: that| this)?",
    r"(?:please )?don'?t forget(?: that)?",
    r"(?:请|你|您)?(?:以后|今后|往后)",
    r"(?:请|你|您)?从现在(?:开始|起)",
    r"(?:请|你|您)?从今(?:天|以后)(?:开始|起)?",
    r"(?:请|你|您)?(?:记住|记得|别忘了|不要忘记)",
    r"merk dir",
    r"souviens-toi(?: que)?",
    r"recuerda que",
    r"これから(?:は)?",
    r"今後(?:は)?",
    r"覚えておいて",
)
"""Cues that only mean it at the start of a sentence ("I remember that day" does not)."""
_CUE = re.compile(
    rf"(?:(?:^|(?<=[\s,;:，；：、]))(?:{'|'.join(_ANYWHERE)})"
    rf"|(?:^|(?<=[.!?。！？]\s)|(?<=[.!?。！？]))(?:{'|'.join(_SENTENCE_START)}))"
    r"[\s,，:：、]*",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True, slots=True, kw_only=True)
class LastingInstruction:
    """A standing request found in the person's words: its topic and the sentence."""

    topic: str
    text: str


def lasting_instruction(text: str) -> LastingInstruction | None:
    """Return the lasting instruction in ``text``, or None when it holds none."""
    clean = clean_text(strip_format(text), MAX_INSTRUCTION_CHARS, one_line=True)
    match = _CUE.search(clean)
    if match is None:
        return None
    rest = clean[match.end() :].strip()
    topic = instruction_topic(rest)
    if not topic:
        return None
    return LastingInstruction(topic=topic, text=clean)


def instruction_topic(rest: str) -> str:
    """Return a topic for the words after the cue: two words, or two wide characters."""
    words: list[str] = _WORD.findall(rest.lower())
    if not words:
        return ""
    first = words[0]
    if is_wide(first[0]):
        return cut_text(first, 2)
    return " ".join(words[:2])
