"""Claims of a change nobody made: "The kitchen light is turned on." when no call turned it on.

A small model may say it did something it never asked a tool to do. A sentence of the
reply that says a device changed (on/off, locked/unlocked, opened/closed, set, started …)
is a claim; when no call of the turn changed anything (a call of a tool not marked read
only that succeeded), the sentence is replaced by the persona's correction ("I haven't
changed anything yet.") before it is shown, spoken or stored (``turn/reply_check.py``).

Claims are phrases, per language, as regular expressions (case-insensitive), of two kinds:

- ``own``: the companion's own doing: "I turned", "I've locked", "Done.", "我把灯打开了",
  "已为你打开". Corrected whenever nothing changed.
- ``state``: a device's new state: "is turned on", "has been locked", "is now on", "已打开",
  "关掉了". The same words report a state the turn looked up ("灯已经打开了" answers "is the
  light on?"), so these are corrected only when no call of the turn succeeded at all.

A plain state ("The light is on.", "灯开着") is no claim; nor is a question, nor a
negation ("I haven't turned it on"). A profile's ``[claims.<language>]`` table replaces
the built-in phrases and correction of that language, key by key; ``enabled = false``
turns the check off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .holding import language_key

MAX_PATTERN_CHARS = 300
MAX_PATTERNS = 64
_QUESTION = re.compile(r"[?？][\s\"'”’」』)）]*$")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})

_EN_DONE = (
    "turned|switched|locked|unlocked|opened|closed|shut|set|dimmed|brightened|started|stopped"
    "|activated|deactivated|armed|disarmed|adjusted|raised|lowered|changed|muted|unmuted"
)
_ZH_DO = "打开|关闭|关掉|关上|开启|锁上|锁好|解锁|调到|调成|调高|调低|调亮|调暗|拉开|拉上|合上|启动"
_ZH_FOR = "帮你|为你|给你|帮您|为您|给您"

BUILT_IN: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {
        "en": MappingProxyType(
            {
                "correction": "I haven't changed anything yet.",
                "own": (
                    rf"\b(?:i|we)(?:'ve| have)?(?: just| now| already)? (?:{_EN_DONE})\b",
                    r"^\W*(?:(?:ok(?:ay)?|sure|alright)[,!.]?\s+)?(?:done|all done|all set)\b",
                    r"^\W*(?:turning|switching|locking|unlocking|opening|closing) "
                    r"(?:on|off|the|your|it|them)\b",
                ),
                "state": (
                    r"\b(?:is|are|'s|'re|has been|have been)(?: now| already)? "
                    r"(?:turned|switched) (?:on|off)\b",
                    rf"\b(?:has|have) been(?: now)? (?:{_EN_DONE})\b",
                    r"\b(?:is|are|'s|'re) now (?:on|off|locked|unlocked|open|opened|closed|shut"
                    r"|armed|disarmed|running|dimmed|brighter|dimmer|muted)\b",
                ),
            }
        ),
        "zh": MappingProxyType(
            {
                "correction": "我还没有做任何更改。",
                "own": (
                    rf"我(?:已经?|刚刚?|刚才)?(?:{_ZH_FOR})?(?:把|将)?[^，。！？,.!?]{{0,12}}?(?:{_ZH_DO})了",
                    rf"已经?(?:{_ZH_FOR})",
                    rf"正在(?:{_ZH_FOR})?(?:{_ZH_DO})",
                    r"(?:搞定|办好|弄好)了",
                ),
                "state": (
                    rf"已经?(?:被|把|将)?[^，。！？,.!?]{{0,8}}?(?:{_ZH_DO})",
                    rf"(?:{_ZH_DO})了",
                ),
            }
        ),
    }
)
"""The phrases and correction of each language a profile does not set itself."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimPhrases:
    """One language's claims (``own``, ``state``) and the line said instead of one."""

    correction: str
    own: tuple[re.Pattern[str], ...] = ()
    state: tuple[re.Pattern[str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeClaims:
    """A profile's ``[claims]``: on or off, and its phrases by language key."""

    enabled: bool = True
    languages: Mapping[str, ClaimPhrases] = field(
        default_factory=lambda: MappingProxyType({key: phrases_of(key, {}) for key in BUILT_IN})
    )

    def claim(self, sentence: str, *, looked: bool) -> ClaimPhrases | None:
        """Return the language whose claim ``sentence`` makes, or None.

        ``looked``: a call of the turn succeeded (it may have read the state reported), so
        only the companion's own doing counts. A question is never a claim.
        """
        if not self.enabled:
            return None
        text = " ".join(sentence.translate(_APOSTROPHES).split())
        if not text or _QUESTION.search(text):
            return None
        for phrases in self.languages.values():
            kinds = phrases.own if looked else (*phrases.own, *phrases.state)
            if any(pattern.search(text) for pattern in kinds):
                return phrases
        return None


def pattern_problem(pattern: str) -> str | None:
    """Say what is wrong with a claim phrase, or None."""
    if not pattern.strip():
        return "a phrase must match something"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"a phrase must be short: at most {MAX_PATTERN_CHARS} characters"
    try:
        re.compile(pattern)
    except re.error as err:
        return f"not a valid regular expression: {err}"
    return None


def phrases_of(key: str, table: Mapping[str, object]) -> ClaimPhrases:
    """Build one language's claims: the profile's keys, the built-in ones for the rest.

    ``key`` is a language key; the built-in table of its primary subtag fills what the
    profile's ``table`` leaves out (none: no phrases, and the correction must be given).
    """
    built_in = BUILT_IN.get(language_key(key).split("-")[0], {})
    merged = {**built_in, **table}
    return ClaimPhrases(
        correction=str(merged.get("correction", "")),
        own=_compiled(merged.get("own", ())),
        state=_compiled(merged.get("state", ())),
    )


def change_claims(**values: object) -> ChangeClaims:
    """Build ``[claims]`` (checked by the profile schema): the built-in languages, then its own."""
    enabled = values.pop("enabled", True)
    tables = {key: phrases_of(key, {}) for key in BUILT_IN}
    for language, table in values.items():
        if isinstance(table, Mapping):
            tables[language_key(language)] = phrases_of(language, table)
    return ChangeClaims(enabled=enabled is True, languages=MappingProxyType(tables))


def _compiled(patterns: object) -> tuple[re.Pattern[str], ...]:
    """Compile checked patterns, case-insensitive."""
    if not isinstance(patterns, tuple | list):
        return ()
    return tuple(re.compile(str(p), re.IGNORECASE) for p in patterns[:MAX_PATTERNS])
