"""The token-level output pipeline: text deltas in; display deltas, sentences and events out.

``sentence_divider → actions_extractor → display_processor → tts_filter``: each stage is a
``Stage`` from ``AsyncIterator[OutputItem]`` to ``AsyncIterator[OutputItem]``; items a
stage does not know pass through untouched and in order.

The model adapter yields ``TextDelta(text=t, model_text=t)`` for reply text and
``ThinkingDelta`` for reasoning. Out come ``TextDelta`` as the reply streams (action
tags removed, ``model_text`` keeping the raw text, tags included), then each finished
``SentenceOutput`` after its text; tool events in place.

    pipeline = build_pipeline(PipelineConfig(action_tags=frozenset({"joy", "wave"})))
    async for item in pipeline(model_items):
        match item:
            case TextDelta(): ...       # text: show it now; model_text: what it came from
            case SentenceOutput(): ...  # display_text, tts_text, actions
            case ThinkingDelta(): ...   # only if show_thinking
            case ToolCallEvent(): ...
    speech = join_speech(sentences)     # tts_text, spaced as the model spaced it

Plugin transformers join through ``extra_stages`` and see the finished stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from ..events import SentenceOutput, TextDelta
from .action_tags import ActionTags
from .actions_extractor import actions_extractor
from .boundaries import BoundaryScanner
from .display_processor import display_processor
from .first_guess import first_guesses
from .sentence_divider import sentence_divider
from .stage import (
    DEFAULT_CONFIG,
    FIRST_CLAUSE_CUT,
    PipelineConfig,
    Stage,
    StageFunction,
    chain,
    speech_config,
)
from .tts_filter import join_speech, speakable, tts_filter

__all__ = [
    "FIRST_CLAUSE_CUT",
    "ActionTags",
    "BoundaryScanner",
    "OutputPipeline",
    "PipelineConfig",
    "Stage",
    "StageFunction",
    "actions_extractor",
    "build_pipeline",
    "display_processor",
    "first_guesses",
    "join_speech",
    "sentence_divider",
    "speakable",
    "speech_config",
    "spoken_sentences",
    "tts_filter",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputPipeline(Stage):
    """Stages run left to right as one stage."""

    config: PipelineConfig
    stages: tuple[Stage, ...]

    @classmethod
    def of(cls, config: PipelineConfig, stages: Sequence[Stage]) -> OutputPipeline:
        """Compose ``stages`` into one pipeline."""
        chosen = tuple(stages)
        name = " → ".join(stage.name for stage in chosen)
        return cls(name=name, apply=chain(chosen), config=config, stages=chosen)


def build_pipeline(
    config: PipelineConfig = DEFAULT_CONFIG, *, extra_stages: Sequence[Stage] = ()
) -> OutputPipeline:
    """Return the standard four stages for ``config``, then ``extra_stages``."""
    return OutputPipeline.of(
        config,
        (
            sentence_divider(config),
            actions_extractor(config),
            display_processor(config),
            tts_filter(config),
            *extra_stages,
        ),
    )


async def spoken_sentences(text: AsyncIterator[str], config: PipelineConfig) -> AsyncIterator[str]:
    """Yield the speech text of each sentence of ``text`` (pieces as they come), none empty."""

    async def deltas() -> AsyncIterator[TextDelta]:
        """Wrap each piece as the pipeline's text delta."""
        async for piece in text:
            yield TextDelta(text=piece, model_text=piece)

    async for item in build_pipeline(config)(deltas()):
        if isinstance(item, SentenceOutput) and item.tts_text:
            yield item.tts_text
