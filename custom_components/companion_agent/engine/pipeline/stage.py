"""A pipeline stage: a stream transformer that also decorates async generator functions."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass
from typing import overload

type StageFunction = Callable[[AsyncIterable[object]], AsyncIterator[object]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    """Turn one item stream into another; unknown items pass through in order.

    ``stage(stream)`` returns the transformed stream. ``@stage`` over an async generator
    function returns a function whose stream is transformed the same way.
    """

    name: str
    apply: StageFunction

    @overload
    def __call__(self, source: AsyncIterable[object], /) -> AsyncIterator[object]: ...

    @overload
    def __call__[**P](
        self, source: Callable[P, AsyncIterable[object]], /
    ) -> Callable[P, AsyncIterator[object]]: ...

    def __call__[**P](
        self, source: AsyncIterable[object] | Callable[P, AsyncIterable[object]], /
    ) -> AsyncIterator[object] | Callable[P, AsyncIterator[object]]:
        """Transform a stream, or wrap a function that returns one."""
        if isinstance(source, AsyncIterable):
            return self.apply(source)
        make = source
        apply = self.apply

        @functools.wraps(make)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[object]:
            """Return the wrapped function's stream, transformed."""
            return apply(make(*args, **kwargs))

        return wrapper


def chain(stages: tuple[Stage, ...]) -> StageFunction:
    """Return one stage function that runs ``stages`` left to right."""

    def apply(stream: AsyncIterable[object]) -> AsyncIterator[object]:
        """Thread the stream through every stage."""
        current: AsyncIterable[object] = stream
        for stage in stages:
            current = stage.apply(current)
        return aiter(current)

    return apply
