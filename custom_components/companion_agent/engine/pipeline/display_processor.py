"""The ``display_processor`` stage: whether thinking reaches the display.

Thinking reaches the display only as ``ThinkingDelta`` items, never inside text: the model
adapter splits reasoning (a reasoning field, or ``<think>…</think>`` in the text) out of
the reply before the pipeline sees it. With ``show_thinking`` on, this stage passes them
through unchanged and in stream order, so the UI can show the reasoning apart from the
answer (the HA glue sends them to the ChatLog as ``thinking_content``); with it off, they
are dropped here and no later stage or consumer sees them. Thinking is never spoken.

Text deltas and sentences pass through as they are: action tags are already gone
(actions_extractor), and whitespace is kept as the model wrote it, so a turn's deltas
and its sentences' ``display_text`` values each join to the reply as shown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..events import OutputItem, ThinkingDelta
from .stage import DEFAULT_CONFIG, PipelineConfig, Stage


def display_processor(config: PipelineConfig = DEFAULT_CONFIG) -> Stage:
    """Return the stage that shows or drops thinking."""
    show_thinking = config.show_thinking

    async def apply(stream: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Pass thinking only if it is to be shown; pass everything else through."""
        async for item in stream:
            match item:
                case ThinkingDelta():
                    if show_thinking:
                        yield item
                case _:
                    yield item

    return Stage(name="display_processor", apply=apply)
