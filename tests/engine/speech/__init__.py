"""Tests of the speech clients: the sentences they speak, and the order a synthesizer keeps."""

import asyncio
from collections.abc import AsyncIterator, Iterable

SENTENCES = ("Good morning.", "The kettle is on.", "See you soon.")
ONE_SENTENCE_AT_A_TIME = [
    ("pulled", 0),
    ("audio", 0),
    ("pulled", 1),
    ("pulled", 2),
    ("audio", 1),
    ("pulled", 3),
    ("audio", 2),
]
"""The log of SENTENCES with a blank line second: each one heard before the next is taken."""

type Log = list[tuple[str, int]]


async def recorded(sentences: Iterable[str], log: Log) -> AsyncIterator[str]:
    """Yield ``sentences``, logging ("pulled", i) as each one is taken."""
    for index, sentence in enumerate(sentences):
        log.append(("pulled", index))
        yield sentence


async def settled(before: set[asyncio.Task[object]]) -> set[asyncio.Task[object]]:
    """Return the tasks beyond ``before`` still alive after they had a moment to finish."""
    for _ in range(100):
        if not (extra := asyncio.all_tasks() - before):
            break
        await asyncio.sleep(0.01)
    return extra
