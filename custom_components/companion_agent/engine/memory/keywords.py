"""Keyword segmentation for FTS5: Chinese and English in one ``unicode61`` column.

SQLite's ``trigram`` tokenizer cannot find a one- or two-character Chinese word (猫, 咖啡),
and ``unicode61`` alone takes a whole run of Han characters for one token. So text is
segmented here, before it reaches FTS5: each run of CJK characters becomes its single
characters plus its overlapping bigrams (我喜欢 → 我 我喜 喜 喜欢 欢); Latin words and
digits are NFKC-folded and lower-cased. Stored text and queries go through the same
segmentation, so a one-character query matches the single-character tokens and a longer
one matches bigrams, which BM25 then weighs by rarity.
"""

from __future__ import annotations

import re
import unicodedata

from ..chars import is_cjk_letter

MAX_QUERY_TERMS = 64
_WORD = re.compile(r"[^\W_]+")


def _runs(text: str) -> list[tuple[bool, str]]:
    """Split folded ``text`` into word runs, each marked CJK or not."""
    runs: list[tuple[bool, str]] = []
    for match in _WORD.finditer(text):
        word = match.group()
        start = 0
        for index in range(1, len(word) + 1):
            if index == len(word) or is_cjk_letter(word[index]) != is_cjk_letter(word[start]):
                runs.append((is_cjk_letter(word[start]), word[start:index]))
                start = index
    return runs


def fold(text: str) -> str:
    """Return ``text`` NFKC-normalised and case-folded: the form every term is made from."""
    return unicodedata.normalize("NFKC", text).casefold()


def segment(text: str) -> str:
    """Return the terms of stored ``text``, space-separated: what the FTS5 column holds."""
    terms: list[str] = []
    for cjk, run in _runs(fold(text)):
        if not cjk:
            terms.append(run)
            continue
        for index, char in enumerate(run):
            terms.append(char)
            if index + 1 < len(run):
                terms.append(run[index : index + 2])
    return " ".join(terms)


def query_terms(text: str) -> list[str]:
    """Return the distinct terms of a query: bigrams for CJK runs, single characters alone."""
    terms: dict[str, None] = {}
    for cjk, run in _runs(fold(text)):
        if not cjk or len(run) == 1:
            terms[run] = None
            continue
        for index in range(len(run) - 1):
            terms[run[index : index + 2]] = None
    return list(terms)[:MAX_QUERY_TERMS]


def match_expression(text: str) -> str | None:
    """Return an FTS5 MATCH expression for ``text`` (any term may match), None if no term."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)
