"""The token-level output pipeline: text tokens in, sentences and structured events out.

``sentence_divider → actions_extractor → display_processor → tts_filter``: each stage is
``AsyncIterable[object] -> AsyncIterator[object]`` and a decorator over async generator
functions; items a stage does not know pass through untouched and in order.

    pipeline = build_pipeline(PipelineConfig(action_tags=frozenset({"joy", "wave"})))
    async for item in pipeline(core.run_turn(...)):
        match item:
            case SentenceOutput(): ...  # display_text, tts_text, actions
            case ThinkingDelta(): ...   # only if show_thinking
            case ToolCallEvent() | TurnResult(): ...

Plugin transformers join through ``extra_stages`` and see finished ``SentenceOutput``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .actions_extractor import ActionTags, actions_extractor
from .boundaries import SentenceDivider
from .config import DEFAULT_CONFIG, PipelineConfig
from .display_processor import display_processor
from .sentence_divider import sentence_divider
from .stage import Stage, StageFunction, chain
from .tts_filter import speakable, tts_filter

__all__ = [
    "ActionTags",
    "OutputPipeline",
    "PipelineConfig",
    "SentenceDivider",
    "Stage",
    "StageFunction",
    "actions_extractor",
    "build_pipeline",
    "display_processor",
    "sentence_divider",
    "speakable",
    "tts_filter",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputPipeline(Stage):
    """Stages run left to right as one stage; call it on a stream or use it as a decorator."""

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
