"""Topics by meaning: what a conclusion is about, as ``subject/attribute``.

A newer conclusion on a topic retires the older one, so a topic must name one attribute of
one subject: ``anna/allergy``, ``self/name``. The memory model gives both parts when it
extracts a conclusion (``topic_of``); each part is normalised here — NFKC, case-folded,
format characters and slashes out, spaces collapsed, at most ``MAX_PART_CHARS`` characters
cut between grapheme clusters, so Chinese is never cut mid-character.

Without a model (a lasting instruction, a to-do item added by hand) ``statement_topic``
decides, and it never merges two different statements: a few single-valued attributes of
the person speaking are recognised (how to call them, which language to answer in, in
English and Chinese) and everything else is ``note/<hash of the whole normalised
statement>``, so the same statement again is the same topic and any other is its own.
"""

from __future__ import annotations

import hashlib
import re

from ...chars import safe_cut, strip_format, valid_text
from .keywords import fold

MAX_PART_CHARS = 40
SELF = "self"
NOTE = "note"
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
CUE = re.compile(
    rf"(?:(?:^|(?<=[\s,;:，；：、]))(?:{'|'.join(_ANYWHERE)})"
    rf"|(?:^|(?<=[.!?。！？]\s)|(?<=[.!?。！？]))(?:{'|'.join(_SENTENCE_START)}))"
    r"[\s,，:：、]*",
    re.IGNORECASE,
)
_ATTRIBUTES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "name",
        re.compile(
            r"^(?:please\s+)?(?:call\s+me|my\s+name\s+is|i\s+go\s+by)\b"
            r"|^(?:请|你|您)?(?:叫我|称呼我|喊我)|^我(?:的名字)?叫"
        ),
    ),
    (
        "language",
        re.compile(
            r"^(?:please\s+)?(?:speak|talk|answer|reply|respond)(?:\s+to\s+me)?\s+in\b"
            r"|^(?:请|你|您)?(?:用|说)[^，。,.!?！？]{1,8}?(?:跟我|和我|对我)?(?:说话|说|回答|回复|讲)"
        ),
    ),
)
"""Single-valued attributes of the person speaking: a new one replaces the old."""
_EDGES = " \t.,;:!?。，；：！？、'\"“”‘’「」()（）"
_SLASHES = re.compile(r"[/\\]+")


def topic_part(text: str) -> str:
    """Return one part of a topic normalised: folded, one line, no slashes, bounded."""
    clean = _SLASHES.sub(" ", fold(strip_format(valid_text(text))))
    clean = " ".join(clean.split()).strip(_EDGES)
    if len(clean) > MAX_PART_CHARS:
        clean = clean[: safe_cut(clean, MAX_PART_CHARS, MAX_PART_CHARS // 2)].rstrip()
    return clean


def topic_of(subject: str, attribute: str) -> str | None:
    """Return ``subject/attribute`` normalised, or None when either part is empty."""
    who, what = topic_part(subject), topic_part(attribute)
    if not who or not what:
        return None
    return f"{who}/{what}"


def strip_cue(text: str) -> str:
    """Return ``text`` without a lasting-instruction cue at its start ("remember that…")."""
    clean = " ".join(strip_format(valid_text(text)).split())
    match = CUE.match(clean)
    return clean[match.end() :].strip() if match else clean


def statement_topic(text: str) -> str:
    """Return the topic of a statement without a model: a known attribute, or its own note.

    "Call me Bob" and "叫我小明" are ``self/name``; "I am allergic to shellfish" and "I am
    driving to Oslo on Friday" are two notes. Empty text has no topic ("").
    """
    statement = " ".join(fold(strip_cue(text)).split()).strip(_EDGES)
    if not statement:
        return ""
    for attribute, pattern in _ATTRIBUTES:
        if pattern.search(statement):
            return f"{SELF}/{attribute}"
    digest = hashlib.sha256(statement.encode("utf-8", "replace")).hexdigest()[:12]
    return f"{NOTE}/{digest}"
