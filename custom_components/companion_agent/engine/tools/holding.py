"""Holding lines: what the companion says while a slow tool runs, instead of dead air.

A tool names the kind of thing it does and, from a call's arguments, what it acts on
(``HoldingHint``); a profile's ``[holding]`` table gives the persona's phrases for each kind,
per language (``HoldingPhrases``); ``HoldingLines`` picks one turn's line for the calls still
running. The tool loop decides when (``turn/loop.py``).

```toml
[holding]
after = 1.5                  # seconds a tool round runs before the line; enabled = false: none
[holding.en]
camera = "One moment, I'm looking at the {target}."   # {target}: what the call acts on
camera_any = "One moment, I'm looking at the camera." # when the target is not known
default = "One moment, please."                       # any other kind, or none
```

A kind's phrase may name ``{target}`` (and nothing else); its ``<kind>_any`` phrase may not,
and is said when the call's target is unknown. A language missing a kind falls back to its
``default``; the turn's language (``zh-Hans-CN``) to its shorter forms (``zh-Hans``, ``zh``),
then to the profile's language.
"""

from __future__ import annotations

import logging
import re
import string
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..chars import cut_text, strip_format, valid_text
from ..json_types import JSONObject
from ..messages import ToolCallRequest
from .contract import parse_arguments

LOGGER = logging.getLogger(__name__)

type HoldingKind = Literal["camera", "search", "home", "memory", "default"]
type TargetReader = Callable[[JSONObject], str | None]
"""Names what a call acts on, from its arguments (None: it cannot tell)."""

KINDS: tuple[HoldingKind, ...] = ("camera", "search", "home", "memory", "default")
ANY = "_any"
"""The suffix of a kind's phrase for a call whose target is unknown."""
TARGET = "target"
DEFAULT_AFTER = 1.5
MAX_TARGET_CHARS = 40
MAX_PHRASE_CHARS = 120
HTML_TAG = re.compile(r"</?[A-Za-z][^<>]{0,60}>")
MARKUP = frozenset("[]{}<>*_`#|\\~^")
"""Characters that mean something to the output pipeline or a display: never in a target."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldingHint:
    """What a tool tells the holding line: the kind of thing it does, and what a call targets."""

    kind: HoldingKind = "default"
    target: TargetReader | None = None


def from_arguments(*names: str) -> TargetReader:
    """Return a reader of the first of ``names`` a call gives as a non-empty string."""

    def read(args: JSONObject) -> str | None:
        """Return the first named argument that is text."""
        for name in names:
            value = args.get(name)
            if isinstance(value, str) and value.strip():
                return value
        return None

    return read


def clean_target(text: str) -> str | None:
    """Return outside text fit to be spoken in a line: one short line, no markup; or None."""
    text = HTML_TAG.sub(" ", strip_format(valid_text(text)))
    kept = "".join(
        " " if char in MARKUP or unicodedata.category(char) == "Cc" else char for char in text
    )
    cut = cut_text(" ".join(kept.split()), MAX_TARGET_CHARS).strip()
    return cut or None


def template_problem(template: str, *, targeted: bool) -> str | None:
    """Say what is wrong with a phrase template, or None (``targeted``: ``{target}`` allowed)."""
    if not template.strip():
        return "a phrase must say something"
    if any(char in template for char in "\r\n\u2028\u2029"):
        return "a phrase is one line"
    if len(template) > MAX_PHRASE_CHARS:
        return f"a phrase must be short: at most {MAX_PHRASE_CHARS} characters"
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as err:
        return f"not a valid template ({err}); write a brace as {{{{ or }}}}"
    for _text, name, spec, conversion in fields:
        if name is None:
            continue
        if name != TARGET or spec or conversion:
            return f"only {{{TARGET}}} may stand in a phrase, not {{{name}}}"
        if not targeted:
            return f"this phrase is said when the target is unknown: no {{{TARGET}}}"
    return None


def names_target(template: str) -> bool:
    """Say whether a (valid) template names the target."""
    return any(name == TARGET for _text, name, _spec, _conv in string.Formatter().parse(template))


def language_key(tag: str) -> str:
    """Return a language tag as phrases are keyed: lower case, ``-`` between subtags."""
    return tag.strip().replace("_", "-").lower()


def language_chain(*tags: str) -> tuple[str, ...]:
    """Return the keys to try for these tags in order, each followed by its shorter forms."""
    chain: list[str] = []
    for tag in tags:
        parts = language_key(tag).split("-")
        for end in range(len(parts), 0, -1):
            key = "-".join(parts[:end])
            if key and key not in chain:
                chain.append(key)
    return tuple(chain)


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldingPhrases:
    """A profile's ``[holding]``: whether and after how long, and its phrases by language."""

    enabled: bool = True
    after: float = DEFAULT_AFTER
    """Seconds a tool round runs with every call still going before the line is said."""
    languages: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    """Language key (``language_key``) → phrase key (a kind, or ``<kind>_any``) → template."""

    @property
    def active(self) -> bool:
        """Say whether a line can ever be said."""
        return self.enabled and bool(self.languages)

    def phrase(self, languages: Sequence[str], kind: str, target: str | None) -> str | None:
        """Return the phrase for ``kind`` and ``target`` in the first language that has one.

        In each language: the kind's phrase with the target, else its phrase for an unknown
        target, else the same for ``default``.
        """
        kinds = (kind, "default") if kind != "default" else ("default",)
        for language in languages:
            table = self.languages.get(language)
            if table is None:
                continue
            for each in kinds:
                if (line := _fill(table, each, target)) is not None:
                    return line
        return None


def _fill(table: Mapping[str, str], kind: str, target: str | None) -> str | None:
    """Return one kind's phrase: with ``target`` if it is known and wanted, else without."""
    main = table.get(kind)
    if main is not None and (target is not None or not names_target(main)):
        return main.format(target=target or "")
    plain = table.get(f"{kind}{ANY}")
    return None if plain is None else plain.format()


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldingLines:
    """One turn's holding lines: the persona's phrases, the turn's languages, the tools' hints."""

    phrases: HoldingPhrases
    languages: tuple[str, ...]
    """Language keys to try, the turn's first (``language_chain``)."""
    hints: Mapping[str, HoldingHint] = field(default_factory=lambda: MappingProxyType({}))
    """Each tool's hint by the name the model calls it; a tool without one is ``default``."""

    @property
    def after(self) -> float:
        """Return how long a round runs before its line."""
        return self.phrases.after

    def line(self, calls: Sequence[ToolCallRequest], said: Collection[str]) -> str | None:
        """Return the line for a round still running ``calls`` (the first decides), or None.

        A line already ``said`` in the turn is not said again: the plain default line is said
        instead, unless that was said too.
        """
        if not calls:
            return None
        call = calls[0]
        hint = self.hints.get(call.name) or HoldingHint()
        line = self.phrases.phrase(self.languages, hint.kind, self._target(hint, call))
        if line is None or line not in said:
            return line
        plain = self.phrases.phrase(self.languages, "default", None)
        return plain if plain is not None and plain not in said else None

    def waiting_line(self, said: Collection[str]) -> str | None:
        """Return the plain line for a wait on the model itself, unless it was ``said``."""
        plain = self.phrases.phrase(self.languages, "default", None)
        return plain if plain is not None and plain not in said else None

    @staticmethod
    def _target(hint: HoldingHint, call: ToolCallRequest) -> str | None:
        """Return what the call acts on, cleaned for speech; None when it cannot be told."""
        if hint.target is None or (args := parse_arguments(call.arguments)) is None:
            return None
        try:
            named = hint.target(args)
        except Exception:  # a tool's reader must never cost the turn its line
            LOGGER.debug("Holding target of %s failed", call.name, exc_info=True)
            return None
        return None if named is None else clean_target(named)
