"""A deterministic yes/no matcher for answers to "should I …?", run before the model.

The rule: after normalising (case, accents, punctuation), an utterance is ``yes`` when it
starts with a yes phrase and every word after it is a yes phrase, a word on the yes tail
list (please, thanks, the action's verbs and nouns) or a word naming the pending action;
``no`` likewise with the no lists. Anything else is ``other``: a question (any ``?``), a
condition ("yes but first …"), an extra request, both polarities, or more than
``MAX_TOKENS`` words. Chinese is matched character by character with the same rule.
The person's language is used together with English.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Literal

from ...chars import HAN
from .words import EN, LANGUAGES, ConsentWords

type Consent = Literal["yes", "no", "other"]
type _Phrase = tuple[str, ...]
type _Pick = Callable[[ConsentWords], str]

MAX_TOKENS = 16

_QUESTION = re.compile(r"[?？¿؟]")
_TOKEN = re.compile(rf"[{HAN}]|(?:(?![{HAN}])[^\W_])+(?:['\-](?:(?![{HAN}])[^\W_])+)*")
_STOP_WORDS = frozenset({"but", "not", "no", "wait", "first", "before", "after", "later"})
_STOP_CHARS = frozenset("不别但先等吗呢")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Grammar:
    """The phrases one polarity may start with, and those allowed after."""

    heads: frozenset[_Phrase]
    allowed: frozenset[_Phrase]
    longest: int


def tokens(text: str) -> list[str]:
    """Split normalised text into words; each Chinese character is a word of its own."""
    folded = unicodedata.normalize("NFKD", text.replace("’", "'").replace("‘", "'"))
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch)).casefold()
    return _TOKEN.findall(plain)


def match_consent(text: str, language: str, *, extra_words: Iterable[str] = ()) -> Consent:
    """Return whether ``text`` says yes, no, or something else; see the module rule.

    ``extra_words`` name the pending action (entity names, ids): they may follow a head,
    so "yes, unlock the front door" is a yes when "front door" names the target.
    """
    if _QUESTION.search(text):
        return "other"
    words = tokens(text)
    if not words or len(words) > MAX_TOKENS:
        return "other"
    extras = frozenset(
        (word,)
        for word in tokens(" ".join(extra_words))
        if word not in _STOP_WORDS and word not in _STOP_CHARS
    )
    yes_grammar, no_grammar = _grammars(_language_key(language))
    said_yes = _parses(words, yes_grammar, extras)
    said_no = _parses(words, no_grammar, extras)
    if said_yes and not said_no:
        return "yes"
    if said_no and not said_yes:
        return "no"
    return "other"


def _language_key(language: str) -> str:
    """Return the supported language for an HA language tag (``zh-Hans`` → ``zh``)."""
    primary = language.replace("_", "-").split("-", maxsplit=1)[0].lower()
    return primary if primary in LANGUAGES else "en"


@cache
def _grammars(key: str) -> tuple[_Grammar, _Grammar]:
    """Build the yes and no grammars of a language together with English."""
    tables = (LANGUAGES[key], EN) if key != "en" else (EN,)
    return (
        _grammar(tables, lambda w: w.yes, lambda w: w.yes_tail),
        _grammar(tables, lambda w: w.no, lambda w: w.no_tail),
    )


def _grammar(tables: Iterable[ConsentWords], heads_of: _Pick, tails_of: _Pick) -> _Grammar:
    """Tokenise one polarity's phrases of the given tables."""
    heads = frozenset(_phrase(p) for table in tables for p in heads_of(table).split("|")) - {()}
    tails = frozenset(_phrase(p) for table in tables for p in tails_of(table).split("|")) - {()}
    allowed = heads | tails
    return _Grammar(heads=heads, allowed=allowed, longest=max(map(len, allowed)))


def _phrase(text: str) -> _Phrase:
    """Tokenise one phrase of a word list."""
    return tuple(tokens(text))


def _parses(words: list[str], grammar: _Grammar, extras: frozenset[_Phrase]) -> bool:
    """Return True when words are one head followed only by allowed phrases."""
    reachable: set[int] = set()
    for size in range(1, min(grammar.longest, len(words)) + 1):
        if tuple(words[:size]) in grammar.heads:
            reachable.add(size)
    if not reachable:
        return False
    for start in range(1, len(words) + 1):
        if start not in reachable:
            continue
        if start == len(words):
            return True
        for size in range(1, min(grammar.longest, len(words) - start) + 1):
            piece = tuple(words[start : start + size])
            if piece in grammar.allowed or piece in extras:
                reachable.add(start + size)
    return False
