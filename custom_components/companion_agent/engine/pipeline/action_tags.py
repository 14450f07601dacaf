"""Action tags: ``[name]`` or ``【name】`` whose name is in the profile's vocabulary.

A name matches case-insensitively, trimmed, and is reported in the vocabulary's own
spelling. Bracketed text that is not in the vocabulary stays text.

Within one sentence a tag is removed with the whitespace before it, or, at the start of a
sentence (nothing visible before it in that sentence), with the whitespace after it:
``"[joy] Hi there [wave]."`` reads ``"Hi there."``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TAG = re.compile(r"\[([^\[\]\n]{1,40})\]|【([^【】\n]{1,40})】")
"""A complete bracketed candidate; it is a tag when its name is in the vocabulary."""
OPEN_TAG = re.compile(r"\[[^\[\]\n]{0,40}\Z|【[^【】\n]{0,40}\Z")
"""A candidate that more text could still close: it runs to the end of the text."""


class ActionTags:
    """Find and remove the vocabulary's tags in a piece of text."""

    __slots__ = ("_names",)

    def __init__(self, vocabulary: Iterable[str]) -> None:
        """Index ``vocabulary`` by its case-folded spelling."""
        self._names = {name.strip().casefold(): name for name in vocabulary if name.strip()}

    @property
    def active(self) -> bool:
        """Say whether there is any tag to look for."""
        return bool(self._names)

    def name(self, found: re.Match[str]) -> str | None:
        """Return the vocabulary's name for a ``TAG`` match, or ``None`` if it is text."""
        return self._names.get((found.group(1) or found.group(2)).strip().casefold())

    def extract(self, text: str) -> tuple[str, tuple[str, ...]]:
        """Return ``text`` without known tags, and the tags' names in order."""
        if not self._names or ("[" not in text and "【" not in text):
            return text, ()
        pieces: list[str] = []
        actions: list[str] = []
        pos = 0
        has_content = False
        eat_space = False
        for found in TAG.finditer(text):
            name = self.name(found)
            if name is None:
                continue
            before = text[pos : found.start()]
            if eat_space:
                before = before.lstrip()
            if has_content or before.strip():
                before, has_content, eat_space = before.rstrip(), True, False
            else:
                eat_space = True
            pieces.append(before)
            actions.append(name)
            pos = found.end()
        if not actions:
            return text, ()
        rest = text[pos:]
        pieces.append(rest.lstrip() if eat_space else rest)
        return "".join(pieces), tuple(actions)
