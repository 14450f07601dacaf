"""actions_extractor: pull emotion/action tags out of each sentence into ``actions``.

A tag is ``[name]`` or ``【name】`` whose name (case-insensitive, trimmed) is in the
profile's vocabulary (``PipelineConfig.action_tags``); it is reported by the vocabulary's
own spelling, in order of appearance. Unknown bracketed text stays text.

A tag is removed with the whitespace before it, or, at the start of a sentence, with the
whitespace after it: ``"[joy] Hi there [wave]."`` reads ``"Hi there."``.

A sentence that was nothing but tags (``"[joy]\\n"``) is not sent on; its actions ride with
the next sentence, since a tag sets the mood of what follows. Actions still waiting when a
non-text item (a tool call, the turn's end) or the end of the stream arrives are sent as
one ``SentenceOutput`` with empty texts, so no action is ever lost.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable

from ..events import SentenceOutput, ThinkingDelta
from .config import DEFAULT_CONFIG, PipelineConfig
from .stage import Stage

_TAG = re.compile(r"\[([^\[\]\n]{1,40})\]|【([^【】\n]{1,40})】")


class ActionTags:
    """Find and remove the vocabulary's tags in a piece of text."""

    __slots__ = ("_names",)

    def __init__(self, vocabulary: Iterable[str]) -> None:
        """Index ``vocabulary`` by its case-folded spelling."""
        self._names = {name.strip().casefold(): name for name in vocabulary if name.strip()}

    def extract(self, text: str) -> tuple[str, tuple[str, ...]]:
        """Return ``text`` without known tags, and the tags' names in order."""
        if not self._names or ("[" not in text and "【" not in text):
            return text, ()
        pieces: list[str] = []
        actions: list[str] = []
        pos = 0
        has_content = False
        eat_space = False
        for found in _TAG.finditer(text):
            name = self._names.get((found.group(1) or found.group(2)).strip().casefold())
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


def actions_extractor(config: PipelineConfig = DEFAULT_CONFIG) -> Stage:
    """Return the stage that moves action tags from sentence text into ``actions``."""
    tags = ActionTags(config.action_tags)

    async def apply(stream: AsyncIterable[object]) -> AsyncIterator[object]:
        """Extract tags from sentences; pass everything else through in order."""
        waiting: tuple[str, ...] = ()
        async for item in stream:
            match item:
                case SentenceOutput(display_text=display, tts_text=tts, actions=own):
                    display, found = tags.extract(display)
                    tts = tags.extract(tts)[0] if tts != item.display_text else display
                    actions = (*waiting, *own, *found)
                    if not display.strip() and not tts.strip():
                        waiting = actions
                        continue
                    waiting = ()
                    if actions == own and tts == item.tts_text:
                        yield item
                    else:
                        yield SentenceOutput(display_text=display, tts_text=tts, actions=actions)
                case ThinkingDelta():
                    yield item
                case _:
                    if waiting:
                        yield SentenceOutput(display_text="", tts_text="", actions=waiting)
                        waiting = ()
                    yield item
        if waiting:
            yield SentenceOutput(display_text="", tts_text="", actions=waiting)

    return Stage(name="actions_extractor", apply=apply)
