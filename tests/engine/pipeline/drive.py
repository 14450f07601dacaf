"""Drive pipeline stages in tests: no event loop, every step observable.

Plain strings stand for model text: each becomes ``TextDelta(text=s, model_text=s)``, as
the model adapter yields it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence

from custom_components.companion_agent.engine.events import OutputItem, SentenceOutput, TextDelta
from custom_components.companion_agent.engine.pipeline import (
    BoundaryScanner,
    PipelineConfig,
    Stage,
)

type Feed = OutputItem | str


def delta(text: str) -> TextDelta:
    """Return model text as the adapter yields it."""
    return TextDelta(text=text, model_text=text)


def items_of(feed: Iterable[Feed]) -> list[OutputItem]:
    """Return ``feed`` with every string made a ``TextDelta``."""
    return [delta(item) if isinstance(item, str) else item for item in feed]


def drain[T](stream: AsyncIterator[T]) -> list[T]:
    """Collect ``stream`` to the end without an event loop (stages never await else)."""

    async def collect() -> list[T]:
        """Gather the stream."""
        return [item async for item in stream]

    step = collect()
    try:
        step.send(None)
    except StopIteration as done:
        result: list[T] = done.value
        return result
    step.close()
    raise AssertionError("a stage awaited something other than its input stream")


def run(stage: Stage, feed: Iterable[Feed]) -> list[OutputItem]:
    """Run ``stage`` over ``feed`` to the end and return everything it yields."""
    items = items_of(feed)

    async def source() -> AsyncIterator[OutputItem]:
        """Yield the items."""
        for item in items:
            yield item

    return drain(stage(source()))


def trace(stage: Stage, feed: Sequence[Feed]) -> list[tuple[int, OutputItem]]:
    """Return each output with the number of input items pulled before it came out."""
    items = items_of(feed)
    pulled = 0

    async def source() -> AsyncIterator[OutputItem]:
        """Yield the items, counting each pull."""
        nonlocal pulled
        for item in items:
            pulled += 1
            yield item

    async def paired() -> AsyncIterator[tuple[int, OutputItem]]:
        """Pair each output with the pull count at that moment."""
        async for item in stage(source()):
            yield pulled, item

    return drain(paired())


def sentences(items: Iterable[object]) -> list[SentenceOutput]:
    """Return only the sentences."""
    return [item for item in items if isinstance(item, SentenceOutput)]


def shown(items: Iterable[object]) -> str:
    """Return the text of the deltas, joined."""
    return "".join(item.text for item in items if isinstance(item, TextDelta))


def modelled(items: Iterable[object]) -> str:
    """Return the model text of the deltas, joined."""
    return "".join(item.model_text for item in items if isinstance(item, TextDelta))


def displayed(items: Iterable[object]) -> str:
    """Return the display text of the sentences, joined."""
    return "".join(item.display_text for item in sentences(items))


def divide(chunks: Iterable[str], config: PipelineConfig | None = None) -> list[str]:
    """Run the bare divider over ``chunks`` and flush it."""
    divider = BoundaryScanner(config or PipelineConfig())
    out = [sentence for chunk in chunks for sentence in divider.feed(chunk)]
    rest = divider.flush()
    return [*out, rest] if rest is not None else out


def chunkings(text: str) -> list[list[str]]:
    """Return a few fixed ways to chunk ``text``: whole, per character, by 2, 3 and 7."""
    sizes = (2, 3, 7)
    fixed = [[text[i : i + size] for i in range(0, len(text), size)] for size in sizes]
    return [[text], list(text), *fixed]
