"""Split ``<think>…</think>`` blocks out of streamed text, tags split across chunks included."""

from __future__ import annotations

from collections.abc import Iterator

from .events import ThinkingDelta

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


def _partial_suffix(text: str, tag: str) -> int:
    """Return the length of the longest suffix of ``text`` that begins ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ThinkSplitter:
    """Feed text chunks; get back spoken text and ``ThinkingDelta`` items in order."""

    __slots__ = ("_held", "_inside")

    def __init__(self) -> None:
        """Start outside any thinking block."""
        self._inside = False
        self._held = ""

    def feed(self, chunk: str) -> Iterator[str | ThinkingDelta]:
        """Yield what can be released of ``chunk``; hold back a possible partial tag."""
        text = self._held + chunk
        self._held = ""
        while text:
            tag = CLOSE_TAG if self._inside else OPEN_TAG
            pos = text.find(tag)
            if pos >= 0:
                head, text = text[:pos], text[pos + len(tag) :]
                self._inside = not self._inside
            else:
                keep = _partial_suffix(text, tag)
                head, self._held, text = text[: len(text) - keep], text[len(text) - keep :], ""
            if head:
                yield ThinkingDelta(text=head) if tag == CLOSE_TAG else head

    def flush(self) -> Iterator[str | ThinkingDelta]:
        """Release whatever is held at the end of the stream."""
        if self._held:
            held, self._held = self._held, ""
            yield ThinkingDelta(text=held) if self._inside else held
