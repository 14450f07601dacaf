"""The ``actions_extractor`` stage: emotion/action tags out of the text, into ``actions``.

Tags and their whitespace follow ``ActionTags`` (``action_tags.py``): ``[joy]`` or
``【joy】`` whose name is in ``PipelineConfig.action_tags``, case-insensitive and trimmed.

Sentences: each ``SentenceOutput`` loses its tags, which become its ``actions`` in order.
A sentence that was nothing but tags (``"[joy]\\n"``) is not sent on; its actions ride with
the next sentence, since a tag sets the mood of what follows. Actions still waiting when a
non-text item (a tool call) or the end of the stream arrives are sent as one
``SentenceOutput`` with empty texts, so no action is ever lost.

Text deltas: cleaned at token level by ``TagStream`` (``action_tags.py``), so the display
streams while the reply does: the deltas' ``text`` joins to the sentences' ``display_text``
and their ``model_text`` to the model text that came in. Held text goes out before each
sentence it belongs to and before any non-text item.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..events import OutputItem, SentenceOutput, TextDelta, ThinkingDelta
from .action_tags import ActionTags, TagStream
from .stage import DEFAULT_CONFIG, PipelineConfig, Stage

__all__ = ["ActionTags", "actions_extractor"]


def actions_extractor(config: PipelineConfig = DEFAULT_CONFIG) -> Stage:
    """Return the stage that moves action tags out of the text and into ``actions``."""
    tags = ActionTags(config.action_tags)

    async def apply(stream: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Clean deltas and sentences; pass everything else through in order."""
        text = TagStream(tags, config.max_sentence_chars)
        waiting: tuple[str, ...] = ()
        async for item in stream:
            match item:
                case TextDelta():
                    if (shown := text.text(item)) is not None:
                        yield shown
                case SentenceOutput(display_text=display, tts_text=tts, actions=own):
                    placed, shown = text.sentence(display)
                    if not placed:
                        shown = text.end()
                    if shown is not None:
                        yield shown
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
                    if (shown := text.end()) is not None:
                        yield shown
                    if waiting:
                        yield SentenceOutput(display_text="", tts_text="", actions=waiting)
                        waiting = ()
                    yield item
        if (shown := text.end()) is not None:
            yield shown
        if waiting:
            yield SentenceOutput(display_text="", tts_text="", actions=waiting)

    return Stage(name="actions_extractor", apply=apply)
