"""A pipeline stage: a named transformer from one stream of output items to another."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from ..events import OutputItem

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
