"""Character classes and the text cleaner: wide CJK script, scripts, grapheme clusters.

The one place that knows Unicode ranges; the pipeline, the yes/no matcher, the prompt's
context block and the HA glue all ask here. ``clean_text`` is the one way text from outside
is made valid and cut to size: every bound on outside text cuts through it (or, for text
already valid, through ``cut_text``), so a cut never falls inside a grapheme cluster.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

ZWJ = "\u200d"
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""CJK ideographs as a regex character-class body (each one is a word of its own)."""


def is_wide(char: str) -> bool:
    """Say whether ``char`` is a CJK letter, kana, hangul or full-width mark."""
    return (
        "\u2e80" <= char <= "\u9fff"
        or "\uac00" <= char <= "\ud7af"
        or "\uf900" <= char <= "\ufaff"
        or "\ufe30" <= char <= "\ufe4f"
        or "\uff00" <= char <= "\uffef"
        or "\U00020000" <= char <= "\U0003134f"
    )


def is_cjk_letter(char: str) -> bool:
    """Say whether ``char`` is CJK text, written without spaces: a wide letter or digit."""
    return is_wide(char) and char.isalnum()


def is_han(char: str) -> bool:
    """Say whether ``char`` is a CJK ideograph."""
    return (
        "\u3400" <= char <= "\u4dbf" or "\u4e00" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"
    )


def is_kana(char: str) -> bool:
    """Say whether ``char`` is hiragana or katakana."""
    return "\u3040" <= char <= "\u30ff"


def is_hangul(char: str) -> bool:
    """Say whether ``char`` is a hangul syllable."""
    return "\uac00" <= char <= "\ud7af"


_SCRIPT_RANGES = (
    ("latin", "\u00c0", "\u024f"),
    ("greek", "\u0370", "\u03ff"),
    ("cyrillic", "\u0400", "\u04ff"),
    ("hebrew", "\u0590", "\u05ff"),
    ("arabic", "\u0600", "\u06ff"),
    ("devanagari", "\u0900", "\u097f"),
    ("thai", "\u0e00", "\u0e7f"),
    ("latin", "\u1e00", "\u1eff"),
)


def script_of(char: str) -> str | None:
    """Return the script a letter is written in (``latin``, ``han``, ``kana`` …), or None.

    None for anything that is not a letter of a script this table knows (digits, marks,
    punctuation, emoji).
    """
    if char.isascii():
        return "latin" if char.isalpha() else None
    if is_han(char):
        return "han"
    if is_kana(char):
        return "kana"
    if is_hangul(char):
        return "hangul"
    if not char.isalpha():
        return None
    return next((name for name, low, high in _SCRIPT_RANGES if low <= char <= high), None)


def is_extender(char: str) -> bool:
    """Say whether ``char`` continues the grapheme cluster before it (never starts a cut)."""
    if char < "\u0300":
        return False
    return (
        char == ZWJ
        or "\ufe00" <= char <= "\ufe0f"
        or "\U0001f3fb" <= char <= "\U0001f3ff"
        or "\U000e0020" <= char <= "\U000e007f"
        or "\U000e0100" <= char <= "\U000e01ef"
        or "\udc00" <= char <= "\udfff"
        or unicodedata.category(char) in ("Mn", "Me", "Mc")
    )


def _is_regional(char: str) -> bool:
    """Say whether ``char`` is a regional indicator (half of a flag)."""
    return "\U0001f1e6" <= char <= "\U0001f1ff"


def splits_cluster(text: str, index: int) -> bool:
    """Say whether cutting ``text`` before ``index`` would break a grapheme cluster."""
    if index <= 0 or index >= len(text):
        return False
    char, before = text[index], text[index - 1]
    if is_extender(char) or before == ZWJ:
        return True
    if _is_regional(char) and _is_regional(before):
        run = 0
        while index - run - 1 >= 0 and _is_regional(text[index - run - 1]):
            run += 1
        return run % 2 == 1
    return False


def safe_cut(text: str, index: int, lowest: int) -> int:
    """Move a cut at ``index`` back to a cluster boundary above ``lowest``, if there is one."""
    cut = index
    while cut > lowest and splits_cluster(text, cut):
        cut -= 1
    return cut if not splits_cluster(text, cut) else index


def cut_text(text: str, limit: int, *, marker: str = "") -> str:
    """Return ``text`` if it fits ``limit`` characters; else its head, then ``marker``.

    The head ends on a grapheme-cluster boundary (never between a letter and its accents,
    inside an emoji sequence or a flag) and leaves room for ``marker`` (``"…"``): the result
    is never longer than ``limit`` (no marker where it alone would not fit). A cluster
    longer than the room goes whole.
    """
    if len(text) <= limit:
        return text
    return _head(text, limit, marker)


def clean_text(
    text: str, limit: int, *, marker: str = "", trim: bool = False, one_line: bool = False
) -> str:
    """Return outside ``text`` valid (``valid_text``) and cut to ``limit`` (as ``cut_text``).

    ``trim`` strips white space from both ends, the head's end too when it is cut;
    ``one_line`` also folds every run of white space (line breaks included) into one space.
    """
    text = valid_text(text)
    if one_line:
        text = " ".join(text.split())
    elif trim:
        text = text.strip()
    if len(text) <= limit:
        return text
    return _head(text, limit, marker, trim=trim or one_line)


def _head(text: str, limit: int, marker: str, *, trim: bool = False) -> str:
    """Return the longest head of ``text`` ending between clusters, then ``marker``: ≤ limit."""
    if len(marker) > limit:
        marker = ""
    head = text[: safe_cut(text, limit - len(marker), 0)]
    return (head.rstrip() if trim else head) + marker


def valid_text(text: str) -> str:
    """Return ``text`` as valid Unicode: surrogate pairs joined, lone halves replaced (U+FFFD).

    Text from outside (a model, a tool, a file, a person) can carry lone UTF-16 surrogates
    that no UTF-8 writer accepts; every boundary passes text through here.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


LINE_BREAKS = "\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character ``str.splitlines`` breaks on: what a reader may take for a new line."""

LOOK_ALIKES = {
    "\N{CYRILLIC SMALL LETTER A}": "a",
    "\N{CYRILLIC SMALL LETTER ES}": "c",
    "\N{CYRILLIC SMALL LETTER KOMI DE}": "d",
    "\N{CYRILLIC SMALL LETTER IE}": "e",
    "\N{CYRILLIC SMALL LETTER SHHA}": "h",
    "\N{CYRILLIC SMALL LETTER EN}": "h",
    "\N{CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I}": "i",
    "\N{CYRILLIC SMALL LETTER JE}": "j",
    "\N{CYRILLIC SMALL LETTER KA}": "k",
    "\N{CYRILLIC SMALL LETTER PALOCHKA}": "l",
    "\N{CYRILLIC SMALL LETTER EM}": "m",
    "\N{CYRILLIC SMALL LETTER PE}": "n",
    "\N{CYRILLIC SMALL LETTER O}": "o",
    "\N{CYRILLIC SMALL LETTER ER}": "p",
    "\N{CYRILLIC SMALL LETTER QA}": "q",
    "\N{CYRILLIC SMALL LETTER GHE}": "r",
    "\N{CYRILLIC SMALL LETTER DZE}": "s",
    "\N{CYRILLIC SMALL LETTER TE}": "t",
    "\N{CYRILLIC SMALL LETTER WE}": "w",
    "\N{CYRILLIC SMALL LETTER HA}": "x",
    "\N{CYRILLIC SMALL LETTER U}": "y",
    "\N{CYRILLIC SMALL LETTER STRAIGHT U}": "y",
    "\N{CYRILLIC CAPITAL LETTER VE}": "b",
    "\N{GREEK SMALL LETTER ALPHA}": "a",
    "\N{GREEK LUNATE SIGMA SYMBOL}": "c",
    "\N{GREEK SMALL LETTER EPSILON}": "e",
    "\N{GREEK SMALL LETTER IOTA}": "i",
    "\N{GREEK SMALL LETTER KAPPA}": "k",
    "\N{GREEK SMALL LETTER ETA}": "n",
    "\N{GREEK SMALL LETTER OMICRON}": "o",
    "\N{GREEK SMALL LETTER RHO}": "p",
    "\N{GREEK SMALL LETTER TAU}": "t",
    "\N{GREEK SMALL LETTER UPSILON}": "u",
    "\N{GREEK SMALL LETTER NU}": "v",
    "\N{GREEK SMALL LETTER CHI}": "x",
    "\N{GREEK SMALL LETTER GAMMA}": "y",
    "\N{GREEK CAPITAL LETTER BETA}": "b",
    "\N{GREEK CAPITAL LETTER ETA}": "h",
    "\N{GREEK CAPITAL LETTER MU}": "m",
    "\N{GREEK CAPITAL LETTER NU}": "n",
    "\N{GREEK CAPITAL LETTER UPSILON}": "y",
    "\N{GREEK CAPITAL LETTER ZETA}": "z",
    "\N{LATIN SMALL LETTER DOTLESS I}": "i",
    "\N{LATIN SMALL LETTER ALPHA}": "a",
    "\N{LATIN SMALL LETTER SCRIPT G}": "g",
}
"""Cyrillic and Greek letters (and three Latin ones) that look like a plain Latin letter.

A small table, not Unicode's confusables list: enough to read ``memory context`` or
``confirmations`` spelt with look-alikes. Capitals fold through ``str.lower`` first, except
where the capital and the small letter look like different Latin letters (Greek Η and η).
"""

_INVISIBLE_MARKS = frozenset({"Cf", "Mn", "Me"})


def is_format(char: str) -> bool:
    """Say whether ``char`` is a format character: zero-width, bidi control, BOM, tag."""
    return unicodedata.category(char) == "Cf"


JOINERS = frozenset({"\u200c", ZWJ})
"""Zero-width (non-)joiners: they shape emoji sequences and Persian or Indic words."""


def strip_format(text: str) -> str:
    """Return ``text`` without format characters (Cf) except the joiners, which carry meaning.

    Bidi controls, the BOM, invisible tag characters (which can smuggle hidden text) go.
    Tag matching folds the joiners away separately, so they cannot disguise a tag.
    """
    if text.isascii():
        return text
    return "".join(char for char in text if char in JOINERS or not is_format(char))


@dataclass(frozen=True, slots=True)
class FoldedText:
    """Text folded for matching, and for each folded character the index it came from."""

    text: str
    origin: tuple[int, ...]


def _fold_char(char: str) -> str:
    """Fold one character: NFKC, then small Latin look-alikes, without invisible marks."""
    folded: list[str] = []
    for part in unicodedata.normalize("NFKC", char):
        for small in LOOK_ALIKES.get(part) or part.lower():
            if unicodedata.category(small) not in _INVISIBLE_MARKS:
                folded.append(LOOK_ALIKES.get(small, small))
    return "".join(folded)


def fold_for_matching(text: str) -> FoldedText:
    """Fold ``text`` so disguised ASCII words match plainly; keep where each part came from.

    NFKC (fullwidth and styled letters become ASCII), format characters and combining
    marks dropped, look-alike letters (``LOOK_ALIKES``) read as Latin, lower case. The
    result is for finding things only; edit the original at ``origin`` indices.
    """
    if text.isascii():
        return FoldedText(text.lower(), tuple(range(len(text))))
    parts: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = _fold_char(char)
        parts.append(folded)
        origin.extend([index] * len(folded))
    return FoldedText("".join(parts), tuple(origin))
