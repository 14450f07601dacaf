"""Character classes: wide (CJK) script, which script a text is in, grapheme-cluster extenders.

The one place that knows Unicode ranges; the pipeline, the yes/no matcher and the HA glue
all ask here.
"""

from __future__ import annotations

import unicodedata

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
