"""``DoneWatch``: whether a streamed response's bytes held the ``[DONE]`` event.

The SDK consumes ``[DONE]`` silently; without it, a server that closed the stream early
cannot be told from one that finished without a ``finish_reason``. The response's byte
stream is wrapped in one of the same HTTP package (httpx or httpx2, see ``sdk_http``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from .. import sdk_http


class DoneWatch:
    """Whether a response's bytes held ``data: [DONE]``."""

    MARK = b"data: [DONE]"

    def __init__(self) -> None:
        """Nothing seen yet."""
        self.seen = False
        self._tail = b""

    def watch(self, response: sdk_http.package.Response) -> None:
        """Wrap the response's byte stream (before anything was read from it)."""
        stream = response.stream
        for base in sdk_http.async_byte_stream_types():
            if isinstance(stream, base):
                response.stream = _watched_type(base)(stream, self)
                return

    def feed(self, data: bytes) -> None:
        """Look for the mark in ``data``, across chunk borders."""
        window = self._tail + data
        if self.MARK in window:
            self.seen = True
        self._tail = window[-len(self.MARK) :]


class _Watched(sdk_http.package.AsyncByteStream):
    """A byte stream that shows every chunk to a ``DoneWatch`` on its way."""

    def __init__(self, inner: sdk_http.package.AsyncByteStream, watch: DoneWatch) -> None:
        """Wrap ``inner``."""
        self._inner = inner
        self._watch = watch

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """Yield the inner chunks, watched."""
        async for chunk in self._inner:
            self._watch.feed(chunk)
            yield chunk

    async def aclose(self) -> None:
        """Close the inner stream."""
        await self._inner.aclose()


_LENT_TYPES: dict[type[sdk_http.package.AsyncByteStream], type[_Watched]] = {}


def _watched_type(base: type[sdk_http.package.AsyncByteStream]) -> type[_Watched]:
    """Return ``_Watched``, made a ``base`` too when ``base`` is the other package's."""
    if issubclass(_Watched, base):
        return _Watched
    if base not in _LENT_TYPES:  # at most one: the other of httpx and httpx2
        _LENT_TYPES[base] = type("WatchedLentStream", (_Watched, base), {})
    return _LENT_TYPES[base]
