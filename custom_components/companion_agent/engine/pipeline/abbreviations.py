"""Words whose final dot may not end a sentence: the sentence divider's abbreviation lists.

``NEVER_FINAL``: a dot after these never ends a sentence (``Mr. Smith``). ``FINAL_IF_CAPITAL``:
it does only when the next word starts with a capital or a CJK character (``etc. The``).
"""

from __future__ import annotations

import re

LONGEST_ABBREVIATION = 8
NEVER_FINAL = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "mt", "sgt", "capt", "gen", "rev", "vs", "cf"}
    | {"e.g", "i.e", "fig", "approx", "ca", "dept"}
)
FINAL_IF_CAPITAL = frozenset(
    {"etc", "a.m", "p.m", "u.s", "u.k", "u.n", "inc", "ltd", "co", "corp", "jr", "sr", "ave"}
)
DOTTED = re.compile(r"(?:[a-z]\.)+[a-z]")
