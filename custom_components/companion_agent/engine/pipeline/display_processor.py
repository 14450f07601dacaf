"""display_processor: shape what a person reads.

Thinking reaches the display only as ``ThinkingDelta`` items, never inside
``display_text``. The model adapter (reasoning fields) and sentence_divider (raw
``<think>…</think>``) both produce them. With ``show_thinking`` on, this stage passes
them through unchanged and in stream order, so the UI can show the reasoning apart from
the answer (the HA glue sends them to the ChatLog as ``thinking_content``); with it off,
they are dropped here and no later stage or consumer sees them. Either way the answer's
text stays free of thinking, and thinking is never spoken.

Sentence text: action tags are already gone (actions_extractor); this stage removes
stray ``<think>`` / ``</think>`` markers a model wrote without their pair. Whitespace is
kept as the model wrote it, so a turn's ``display_text`` values concatenate to its reply.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator

from ..events import SentenceOutput, ThinkingDelta
from .config import DEFAULT_CONFIG, PipelineConfig
from .stage import Stage

_STRAY_THINK_TAG = re.compile(r"</?think(?:ing)?>", re.IGNORECASE)


def display_text(text: str) -> str:
    """Return ``text`` as a person should read it."""
    if "<" not in text:
        return text
    return _STRAY_THINK_TAG.sub("", text)


def display_processor(config: PipelineConfig = DEFAULT_CONFIG) -> Stage:
    """Return the stage that decides what the display gets."""
    show_thinking = config.show_thinking

    async def apply(stream: AsyncIterable[object]) -> AsyncIterator[object]:
        """Show or drop thinking, clean sentence text; pass everything else through."""
        async for item in stream:
            match item:
                case ThinkingDelta():
                    if show_thinking:
                        yield item
                case SentenceOutput(display_text=text, tts_text=tts, actions=actions):
                    shown = display_text(text)
                    if shown == text:
                        yield item
                    else:
                        yield SentenceOutput(display_text=shown, tts_text=tts, actions=actions)
                case _:
                    yield item

    return Stage(name="display_processor", apply=apply)
