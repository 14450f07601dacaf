"""One thread for everything mem0 does: opening it (again, after an outage), each call, closing.

Everything mem0 does is blocking, so it runs on one worker thread owned by the store: one
``Memory`` (and one Qdrant client) per store, every call in turn, each within the timeout
(waiting included). mem0 is imported on that thread on ``open``. A store made while its
backend was away opens at its first call after (tries ``REOPEN_RETRY`` apart: 30 s).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ....errors import MemoryBackendError, MemoryStoreError
from ....retry import RetryPolicy
from ...embeddings import Embedder, InputType
from .setup import (
    BACKEND,
    EmbedderBridge,
    Mem0Memory,
    Mem0Settings,
    import_mem0,
    open_memory,
    qdrant_client,
)
from .setup import backend_error as _error

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

OPEN_TIMEOUT = 60.0
REOPEN_RETRY = RetryPolicy(attempts=None, first_delay=30.0, factor=1.0, max_delay=30.0)
"""A store that could not open tries again at a call at least 30 s after its last try."""


class Mem0Worker:
    """mem0's ``Memory`` and Qdrant client, on their own thread, opened on demand."""

    def __init__(self, settings: Mem0Settings, embedder: Embedder) -> None:
        """Prepare the thread; nothing is opened until ``open`` or the first call."""
        self.settings = settings
        self.embedder = embedder
        self.client: QdrantClient | None = None
        """The Qdrant client, for counting and pruning (worker thread only)."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem0")
        self._memory: Mem0Memory | None = None
        self._bridge: EmbedderBridge | None = None
        self._closed = False
        self._opening = asyncio.Lock()
        self._next_open = 0.0
        self._open_tries = 0

    async def open(self) -> None:
        """Learn the embedder's vector size, then open Qdrant and mem0 on the thread."""
        (probe,) = await self.embedder.embed(["dimension probe"], "passage")
        bridge = EmbedderBridge(self.embedder, asyncio.get_running_loop(), self.settings.timeout)
        self._bridge = bridge

        def work() -> None:
            """Open the client and the Memory."""
            import_mem0(self.settings.folder)
            self.client = qdrant_client(self.settings)
            self._memory = open_memory(self.settings, self.client, len(probe), bridge)

        await self.run(work, seconds=max(OPEN_TIMEOUT, self.settings.timeout))

    async def call[T](self, work: Callable[[Mem0Memory], T]) -> T:
        """Run ``work`` with the open Memory on the thread (opening it if need be)."""
        if self._memory is None and not self._closed:
            await self._reopen()

        def bound() -> T:
            """Hand the Memory to ``work``."""
            if self._memory is None:
                raise MemoryBackendError("the store is not open", backend=BACKEND, problem="failed")
            return work(self._memory)

        return await self.run(bound)

    async def run[T](self, work: Callable[[], T], *, seconds: float | None = None) -> T:
        """Run ``work`` on the thread within the timeout; map its failures."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(seconds or self.settings.timeout):
                return await loop.run_in_executor(self._executor, work)
        except TimeoutError as err:
            raise MemoryBackendError(
                "mem0 did not answer in time", backend=BACKEND, problem="cannot_connect"
            ) from err
        except MemoryStoreError:
            raise
        except Exception as err:
            raise _error(err) from err

    def prime(self, side: InputType, texts: list[str], vectors: list[list[float]]) -> None:
        """Hand the bridge this call's vectors (on the thread)."""
        if self._bridge is not None:
            self._bridge.prime(side, texts, vectors)

    async def close(self) -> None:
        """Close mem0's history database and the Qdrant client; end the thread."""
        if self._closed:
            return
        self._closed = True

        def work() -> None:
            """Close what is open."""
            memory, client, self._memory, self.client = self._memory, self.client, None, None
            if memory is not None:
                memory.close()
            if client is not None:
                client.close()

        try:
            await self.run(work)
        finally:
            await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown)

    async def _reopen(self) -> None:
        """Open the store now unless ``REOPEN_RETRY`` says to wait longer; raise if not."""
        async with self._opening:
            if self._memory is not None:
                return
            loop = asyncio.get_running_loop()
            if loop.time() < self._next_open:
                raise MemoryBackendError("not open yet", backend=BACKEND, problem="cannot_connect")
            self._open_tries += 1
            self._next_open = loop.time() + REOPEN_RETRY.delay(self._open_tries)
            await self.open()
