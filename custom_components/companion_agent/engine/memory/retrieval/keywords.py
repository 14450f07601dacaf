"""Keyword segmentation for FTS5: Chinese and English in one ``unicode61`` column.

SQLite's ``trigram`` tokenizer cannot find a one- or two-character Chinese word (猫, 咖啡),
and ``unicode61`` alone takes a whole run of Han characters for one token. So text is
segmented here, before it reaches FTS5: each run of CJK characters becomes its single
characters plus its overlapping bigrams (我喜欢 → 我 我喜 喜 喜欢 欢); Latin words and
digits are NFKC-folded and lower-cased. Stored text and queries go through the same
segmentation, so a one-character query matches the single-character tokens and a longer
one matches bigrams, which BM25 then weighs by rarity.

A question's function words ("what", "did", "the", "你", "吗") match nearly every memory:
``match_expression(..., common=False)`` leaves them out (unless nothing else is left), so
the words that carry the question decide, and the index reads far fewer rows.
"""

from __future__ import annotations

import re
import unicodedata

from ...chars import is_cjk_letter

MAX_QUERY_TERMS = 64
WORD = re.compile(r"[^\W_]+")
"""A word: a run of letters and digits (what every term is cut from)."""
_COMMON = """a about above after again all also am an and any are as at be been before being
below between both but by can could d did do does doing down during each ever few for from
get got had has have having he her here hers herself him himself his how i if in into is it
its itself just ll let m me more most my myself no nor not now of off on once only or other
our ours out over own re s same she should so some such t than that the their theirs them
themselves then there these they this those through to too under until up ve very was we
were what when where which while who whom why will with would you your yours yourself
yourselves 的 了 吗 呢 吧 啊 是 我 你 他 她 它 们 在 有 和 就 都 也 这 那 什么 怎么"""
COMMON_WORDS = frozenset(_COMMON.split())


def _runs(text: str) -> list[tuple[bool, str]]:
    """Split folded ``text`` into word runs, each marked CJK or not."""
    runs: list[tuple[bool, str]] = []
    for match in WORD.finditer(text):
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


def match_expression(text: str, *, common: bool = True) -> str | None:
    """Return an FTS5 MATCH expression for ``text`` (any term may match), None if no term.

    Without ``common``, function words are left out while another term is left.
    """
    terms = query_terms(text)
    if not common:
        terms = [term for term in terms if term not in COMMON_WORDS] or terms
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


def asks(text: str) -> bool:
    """Say whether ``text`` asks something: a question mark, or 吗 / 呢 / 么 at its end."""
    if "?" in text or "？" in text:
        return True
    return text.rstrip(" \t\n。.!！~～").endswith(("吗", "呢", "么"))
