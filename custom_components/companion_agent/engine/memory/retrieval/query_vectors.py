"""Query embeddings shared by the searches of one turn, waited for only as long as allowed.

A turn searches its conclusions and its details at once, with the same text: the query is
embedded once (``QueryVectors.vector``), and each search waits for that one request only as
long as its own deadline allows. A request that comes too late is not cancelled: it goes on
in the background, bounded (``MAX_KEPT`` kept, the oldest unfinished one cancelled), so a
later search of the same text takes its vector at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from ...errors import EmbeddingError
from ..embeddings import Embedder

LOGGER = logging.getLogger(__name__)

MAX_KEPT = 32


class QueryVectors:
    """One embedding request per query text, shared and kept for a while."""

    def __init__(self, embedder: Embedder, *, timeout: float) -> None:
        """Embed queries with ``embedder``; no request runs longer than ``timeout`` s."""
        self._embedder = embedder
        self._timeout = timeout
        self._kept: OrderedDict[str, asyncio.Future[list[float] | None]] = OrderedDict()

    async def vector(self, text: str, wait: float) -> list[float] | None:
        """Return the query vector of ``text`` if it arrives within ``wait`` s, else None."""
        future = self._kept.get(text)
        if future is None or (future.done() and future.result() is None):
            future = asyncio.ensure_future(self._embed(text))
            self._kept[text] = future
            while len(self._kept) > MAX_KEPT:
                _, old = self._kept.popitem(last=False)
                old.cancel()
        else:
            self._kept.move_to_end(text)
        if not future.done():
            await asyncio.wait([future], timeout=max(0.0, wait))
        if not future.done():
            LOGGER.debug("Memory search goes on with keywords: the query embedding is late")
            return None
        return None if future.cancelled() else future.result()

    async def _embed(self, text: str) -> list[float] | None:
        """Embed one query within the timeout; None when it fails."""
        try:
            async with asyncio.timeout(self._timeout):
                (vector,) = await self._embedder.embed([text], "query")
        except TimeoutError:
            LOGGER.warning("Memory search goes on without vectors: embedding was too slow")
            return None
        except EmbeddingError as err:
            LOGGER.warning("Memory search goes on without vectors: %s", err)
            return None
        return vector

    def close(self) -> None:
        """Cancel the requests still under way."""
        for future in self._kept.values():
            future.cancel()
        self._kept.clear()
