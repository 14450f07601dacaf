"""Split ``<think>…</think>`` blocks out of streamed text, tags split across chunks included.

The one place that knows the tag: the adapter feeds every content chunk through it, so
nothing downstream ever sees ``<think>``. A closing tag with no opening one (servers that
put the opening tag in the prompt template) is dropped rather than shown.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..events import ThinkingDelta

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


def _partial_suffix(text: str, tags: tuple[str, ...]) -> int:
    """Return the length of the longest suffix of ``text`` that begins one of ``tags``."""
    longest = max(len(tag) for tag in tags) - 1
    if "<" not in text[-longest:]:
        return 0  # both tags start with "<"
    for size in range(min(longest, len(text)), 0, -1):
        if any(tag.startswith(text[-size:]) for tag in tags):
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
            tags = (CLOSE_TAG,) if self._inside else (OPEN_TAG, CLOSE_TAG)
            found = [(pos, tag) for tag in tags if (pos := text.find(tag)) >= 0]
            if found:
                pos, tag = min(found)
                head, text = text[:pos], text[pos + len(tag) :]
                inside = self._inside
                self._inside = tag == OPEN_TAG
            else:
                keep = _partial_suffix(text, tags)
                head, self._held, text = text[: len(text) - keep], text[len(text) - keep :], ""
                inside = self._inside
            if head:
                yield ThinkingDelta(text=head) if inside else head

    def flush(self) -> Iterator[str | ThinkingDelta]:
        """Release whatever is held at the end of the stream."""
        if self._held:
            held, self._held = self._held, ""
            yield ThinkingDelta(text=held) if self._inside else held
