"""Sentence marks and what the text after them decides: the sentence divider's lookahead.

The character classes ``BoundaryScanner`` scans for, and the verdicts it waits on: what a
finished run of marks means given the character after it (``run_verdict``), whether the
word after an abbreviation or an ellipsis starts a sentence (``starts_sentence``), what may
trail a sentence's end (``trails``: whitespace and emoji), and where the hard cap breaks a
sentence that grew too long (``best_break``). Each is a function of the text alone; the
rules they serve are stated in ``boundaries.py``. The abbreviation lists say which words'
final dot may not end a sentence.
"""

from __future__ import annotations

import re
from typing import Literal

from ..chars import is_cjk_letter, is_extender, is_wide, safe_cut

ASCII_TERMINATORS = ".!?"
WIDE_TERMINATORS = "。！？；｡．"
ELLIPSIS = "…"
DOTS = "." + ELLIPSIS
TERMINATORS = ASCII_TERMINATORS + WIDE_TERMINATORS + ELLIPSIS
PAIRS = dict(zip('([{「『“‘（【《〈〔［｛﹁﹃"', ')]}」』”’）】》〉〕］｝﹂﹄"', strict=True))
CLOSERS = frozenset(PAIRS.values())
RUN_CLOSERS = CLOSERS | {"'"}
"""What may close a run of marks: every closer, and ``'`` (never tracked: also an apostrophe)."""
NEWLINES = "\n\u2028\u2029"
RUN_MARKUP = "*_`"
_CAP_BREAKS = ",，、;；:："
_WORD_STOPS = frozenset(" \t\r\n\u3000'\"") | frozenset(PAIRS)
_LIST_LEAD = " \t\r\n*-+#>"
_WORD = re.compile(r"[^\W_]")

LONGEST_ABBREVIATION = 8
NEVER_FINAL = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "mt", "sgt", "capt", "gen", "rev", "vs", "cf"}
    | {"e.g", "i.e", "fig", "approx", "ca", "dept"}
)
"""Abbreviations whose final dot never ends a sentence (``Mr. Smith``)."""
FINAL_IF_CAPITAL = frozenset(
    {"etc", "a.m", "p.m", "u.s", "u.k", "u.n", "inc", "ltd", "co", "corp", "jr", "sr", "ave"}
)
"""Abbreviations whose dot ends a sentence only before a capital or a CJK character
(``etc. The``)."""
DOTTED = re.compile(r"(?:[a-z]\.)+[a-z]")

type Awaiting = Literal["trail", "await_capital", "await_number", "await_ellipsis"]
"""What an end waits for, past whitespace and emoji: any text (``trail``) or a fitting word."""
type Verdict = Literal["cut", "keep"] | Awaiting


def starts_emoji(char: str) -> bool:
    """Say whether ``char`` starts an emoji: a pictograph, a symbol or dingbat, a flag half.

    The rest of its grapheme cluster (ZWJ and the next pictograph, skin tone, variation
    selector, tag characters) is ``is_extender`` or starts an emoji itself. Keycaps (``1️⃣``)
    start with a digit and count as text.
    """
    return (
        "\U0001f000" <= char <= "\U0001faff"
        or "\u2600" <= char <= "\u27bf"
        or "\u2b00" <= char <= "\u2bff"
        or "\u2300" <= char <= "\u23ff"
    )


def trails(char: str) -> bool:
    """Say whether ``char`` may trail a sentence's end: whitespace but a newline, or emoji."""
    return (char.isspace() and char not in NEWLINES) or starts_emoji(char) or is_extender(char)


def run_verdict(buf: str, run_start: int, end: int, char: str, *, eager: bool) -> Verdict:
    """Decide what the run of marks ``buf[run_start:end]``, then ``char``, means.

    The run starts with an ASCII mark or ``…`` that waits on the text after it; ``char``
    is no newline, and no quote or bracket is open. An ``eager`` run (a dot right after
    CJK) ends the sentence whatever follows. Whitespace and emoji after a run are a gap:
    the text after the gap decides, and an end waits for it, since the gap may trail.
    """
    gap = trails(char)
    if eager:
        return "trail" if gap else "cut"
    if not _WORD.search(buf, 0, run_start):
        return "keep"  # marks before any word end nothing (``...And``, ``**…OK``, ``? 🎉``)
    run = buf[run_start:end]
    if ELLIPSIS in run or run.count(".") >= 2:
        if gap:
            return "await_ellipsis"
        return "cut" if char.isupper() or is_cjk_letter(char) else "keep"
    if not (gap or is_wide(char)):
        return "keep"
    verdict = "cut" if run[0] != "." else _dot_verdict(buf, run_start, char)
    return "trail" if gap and verdict == "cut" else verdict


def _dot_verdict(buf: str, run_start: int, char: str) -> Verdict:
    """Decide whether the dot at ``run_start`` ends a sentence: the word before it decides."""
    start = run_start
    while start > 0 and buf[start - 1] not in _WORD_STOPS:
        start -= 1
        if run_start - start > LONGEST_ABBREVIATION:
            return "cut"
    word = buf[start:run_start]
    lowered = word.lower()
    if not word:
        return "cut"
    if word.isdigit() and len(word) <= 3 and not buf[:start].strip(_LIST_LEAD):
        return "keep"
    if lowered in NEVER_FINAL or (len(word) == 1 and word.isupper()):
        return "keep"
    if lowered == "no":
        return "await_number"
    if lowered in FINAL_IF_CAPITAL or DOTTED.fullmatch(lowered):
        return "cut" if is_wide(char) else "await_capital"
    return "cut"


def starts_sentence(mode: Awaiting, char: str) -> bool:
    """Say whether the text starting with ``char`` begins a sentence after ``mode``'s mark."""
    match mode:
        case "trail":
            return char not in TERMINATORS  # ``Done! 🎉!`` is one sentence
        case "await_number":
            return not (char.isdigit() or char == "#")
        case "await_capital":
            return char.isupper() or is_wide(char) or char in PAIRS
        case "await_ellipsis":
            return char.isupper() or is_cjk_letter(char)


def best_break(buf: str, low: int, limit: int) -> int:
    """Return the last clause mark, else the last space, in ``buf[low:limit]``; else a safe cut."""
    space = limit if buf[limit].isspace() else -1
    for j in range(limit - 1, low - 1, -1):
        char = buf[j]
        if char in _CAP_BREAKS and not (char == "," and buf[j + 1].isdigit()):
            return j + 1
        if space < 0 and char.isspace():
            space = j
    if space >= 0:
        return len(buf[:space].rstrip()) or space + 1
    return safe_cut(buf, limit, max(1, low))
