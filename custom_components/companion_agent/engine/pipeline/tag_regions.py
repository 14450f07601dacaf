"""The pieces ``TagStream`` decides with: tags in a sentence's text, and what a stretch of
whitespace and tags between two visible characters shows."""

from __future__ import annotations

import re

from .action_tags import OPEN_TAG, TAG, ActionTags

type Span = tuple[int, int]
type Region = list[tuple[str, list[Span]]]
"""Whitespace and tags before a visible character: one part per sentence, with tag spans."""

_VISIBLE = re.compile(r"\S")
_CUTTABLE = re.compile(r"[\s,，、;；:：]")
"""Where the length cap may cut inside a tag's name."""
_LEFT = "a"
_RIGHT = "b"
"""Visible stand-ins for the text on either side of a region."""


def parse(tags: ActionTags, text: str, open_end: bool) -> tuple[list[Span], int, list[Span]]:
    """Parse one sentence's text as ``ActionTags.extract`` would.

    Return the known tags, where a candidate that more text could still close starts
    (``len(text)`` if none, or if ``open_end`` is false), and bracketed text with a bracket
    inside it (a cut inside it would free the inner tag).
    """
    size = len(text)
    if not tags.active or ("[" not in text and "【" not in text):
        return [], size, []
    pending = OPEN_TAG.search(text) if open_end else None
    open_at = size if pending is None else pending.start()
    known: list[Span] = []
    nested: list[Span] = []
    for found in TAG.finditer(text):
        if found.start() > open_at:
            break
        if tags.name(found) is not None:
            known.append(found.span())
        elif "[" in (inner := found.group()[1:]) or "【" in inner:
            nested.append(found.span())
        if open_at < found.end():
            pending = OPEN_TAG.search(text, found.end())
            open_at = size if pending is None else pending.start()
    return known, open_at, nested


def first_visible(text: str, tags: list[Span], limit: int) -> int | None:
    """Return where the first character outside ``tags`` and whitespace is, before ``limit``."""
    pos = 0
    for start, end in tags:
        if (found := _VISIBLE.search(text, pos, start)) is not None:
            return found.start()
        pos = end
    found = _VISIBLE.search(text, pos, limit)
    return None if found is None else found.start()


def shown(tags: ActionTags, region: Region, content: bool, before_visible: bool) -> str:
    """Return what ``region`` shows, by ``ActionTags.extract`` on each sentence's part.

    ``content``: the first part's sentence showed something before the region;
    ``before_visible``: a visible character follows the last part in its sentence. A
    sentence of tags alone shows nothing.
    """
    out: list[str] = []
    last = len(region) - 1
    for index, (raw, spans) in enumerate(region):
        left = index == 0 and content
        right = index == last and before_visible
        if not (left or right):
            continue
        if not spans:
            out.append(raw)
            continue
        cleaned = tags.extract((_LEFT if left else "") + raw + (_RIGHT if right else ""))[0]
        out.append(cleaned[1 if left else 0 : len(cleaned) - 1 if right else len(cleaned)])
    return "".join(out)


def cut_proof(region: Region) -> bool:
    """Say whether no sentence cut inside ``region`` could change what it shows.

    True when every whitespace run around its tags is the same and no tag's name holds a
    place the length cap could cut at.
    """
    runs: set[str] = set()
    for raw, spans in region:
        pos = 0
        for start, end in spans:
            if _CUTTABLE.search(raw, start, end):
                return False
            runs.add(raw[pos:start])
            pos = end
        runs.add(raw[pos:])
    return len(runs) <= 1
