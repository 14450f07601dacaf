"""A pipeline stage and its settings: ``Stage``, and ``PipelineConfig`` shared by every stage.

A ``Stage`` is a named transformer from one stream of output items to another; items it
does not know pass through in order. ``PipelineConfig`` is one frozen value every stage of
a pipeline is built with: how sentences are cut, which tags are actions, what is shown and
what is spoken.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from ..events import OutputItem

MIN_SENTENCE_CHARS = 8

FIRST_CLAUSE_CUT = True
"""Whether a reply's first sentence may end at a comma (``faster_first_response``).

Kept on a measured gain (README, *Speed*): the clause reaches the voice before the sentence
ends. Every text spoken goes through ``speech_config``, so turns and foreign text cut alike."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineConfig:
    """How sentences are cut, which tags are actions, what is shown and what is spoken.

    ``max_sentence_chars``: hard cap; a longer sentence is cut at its best break.
    ``faster_first_response``: the first sentence may end at a comma (``,，、``) once it
    holds ``first_clause_min_chars`` characters, so the first audio starts earlier.
    ``action_tags``: the profile's emotion/action vocabulary (``joy`` matches ``[joy]``
    and ``【joy】``, case-insensitively); other bracketed text stays text.
    ``show_thinking``: pass ``ThinkingDelta`` on to the display, or drop it.
    ``url_word``: what TTS says instead of a URL; ``None`` picks one by script.
    """

    max_sentence_chars: int = 200
    faster_first_response: bool = False
    first_clause_min_chars: int = 10
    action_tags: frozenset[str] = frozenset()
    show_thinking: bool = False
    url_word: str | None = None

    def __post_init__(self) -> None:
        """Reject settings no stage can honour."""
        if self.max_sentence_chars < MIN_SENTENCE_CHARS:
            msg = f"max_sentence_chars must be at least {MIN_SENTENCE_CHARS}"
            raise ValueError(msg)
        if self.first_clause_min_chars < 1:
            msg = "first_clause_min_chars must be at least 1"
            raise ValueError(msg)


DEFAULT_CONFIG = PipelineConfig()


def speech_config(tags: frozenset[str], *, show_thinking: bool = False) -> PipelineConfig:
    """Return the settings text is cut and cleaned for speech with: a vocabulary's ``tags``.

    The one place a pipeline for speech is configured: a turn's (its profile's vocabulary)
    and a foreign text's (one that comes from no turn) differ only in the tags.
    """
    return PipelineConfig(
        action_tags=tags, faster_first_response=FIRST_CLAUSE_CUT, show_thinking=show_thinking
    )


type StageFunction = Callable[[AsyncIterator[OutputItem]], AsyncIterator[OutputItem]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    """Turn one item stream into another; items a stage does not know pass through in order."""

    name: str
    apply: StageFunction

    def __call__(self, stream: AsyncIterator[OutputItem], /) -> AsyncIterator[OutputItem]:
        """Return the transformed stream."""
        return self.apply(stream)


def chain(stages: tuple[Stage, ...]) -> StageFunction:
    """Return one stage function that runs ``stages`` left to right."""

    def apply(stream: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Thread the stream through every stage."""
        current = stream
        for stage in stages:
            current = stage.apply(current)
        return current

    return apply
