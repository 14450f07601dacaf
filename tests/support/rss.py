"""This process's resident memory, sampled while something runs (Linux's ``/proc``).

``RssPeak`` samples it every ``interval`` seconds from its own task while the body of an
``async with`` runs; ``growth`` is the highest sample over the one taken at the start.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from types import TracebackType
from typing import Self

STATUS = Path("/proc/self/status")
MB = 1024 * 1024


def rss_bytes() -> int:
    """Return this process's resident memory now, in bytes."""
    for text in STATUS.read_text().splitlines():
        if text.startswith("VmRSS:"):
            return int(text.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class RssPeak:
    """The peak resident memory over the start, sampled while the ``async with`` body runs."""

    def __init__(self, interval: float = 0.005) -> None:
        """Sample every ``interval`` seconds."""
        self._interval = interval
        self.start = 0
        self.peak = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def growth(self) -> int:
        """Return how far the memory rose above the start, in bytes."""
        return self.peak - self.start

    async def __aenter__(self) -> Self:
        """Take the first sample and keep sampling."""
        self.start = self.peak = rss_bytes()
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop sampling, after one last sample."""
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.peak = max(self.peak, rss_bytes())

    async def _sample(self) -> None:
        """Note the highest sample until cancelled."""
        while True:
            self.peak = max(self.peak, rss_bytes())
            await asyncio.sleep(self._interval)
