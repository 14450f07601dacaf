"""``ThinkSplitter``: ``<think>…</think>`` blocks split out of streamed text, across chunks.

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


MAX_OPENED_CHARS = 16_000
"""Text held as thinking in a block the template opened, before it is taken for the answer."""


class ThinkSplitter:
    """Feed text chunks; get back spoken text and ``ThinkingDelta`` items in order.

    ``opened``: the server's chat template opens the block itself (Qwen3 "thinking"
    models, DeepSeek-R1 distills without a reasoning parser), so the reply starts inside
    it. That text is held until ``</think>`` comes, then shown as thinking; a reply that
    ends (or grows past ``MAX_OPENED_CHARS``) without one was an answer after all and is
    released as text. ``lone_close`` says a reply closed a block it never opened: the
    adapter then splits later replies as ``opened``.
    """

    __slots__ = ("_held", "_inside", "_opened", "_thought", "lone_close", "unclosed")

    def __init__(self, *, opened: bool = False) -> None:
        """Start outside any thinking block, or inside one the template opened."""
        self._inside = opened
        self._opened = opened
        self._held = ""
        self._thought: list[str] = []
        self.lone_close = False
        self.unclosed = False
        """Set when a reply split as ``opened`` ended without closing the block."""

    def feed(self, chunk: str) -> Iterator[str | ThinkingDelta]:
        """Yield what can be released of ``chunk``; hold back a possible partial tag."""
        text = self._held + chunk
        self._held = ""
        while text:
            tags = (OPEN_TAG, CLOSE_TAG) if self._opened or not self._inside else (CLOSE_TAG,)
            found = [(pos, tag) for tag in tags if (pos := text.find(tag)) >= 0]
            if found:
                pos, tag = min(found)
                head, text = text[:pos], text[pos + len(tag) :]
                inside = self._inside
                if tag == CLOSE_TAG and not inside:
                    self.lone_close = True
                if not (self._opened and tag == OPEN_TAG):  # a template's block opened twice
                    self._inside = tag == OPEN_TAG
            else:
                keep = _partial_suffix(text, tags)
                head, self._held, text = text[: len(text) - keep], text[len(text) - keep :], ""
                inside = self._inside
            yield from self._release(head, inside, closed=bool(found) and not self._inside)

    def flush(self) -> Iterator[str | ThinkingDelta]:
        """Release whatever is held at the end of the stream."""
        held, self._held = self._held, ""
        if self._opened:  # no </think> came: the held text was the answer
            self._opened = self._inside = False
            self.unclosed = True
            held = "".join([*self._thought, held])
            self._thought = []
        if held:
            yield ThinkingDelta(text=held) if self._inside else held

    def _release(self, head: str, inside: bool, *, closed: bool) -> Iterator[str | ThinkingDelta]:
        """Yield one piece as text or thinking; in a template's block, hold it until it ends."""
        if self._opened and inside:
            self._thought.append(head)
            if closed:  # the template's block ended: all of it was thinking
                self._opened = False
                if thought := "".join(self._thought):
                    yield ThinkingDelta(text=thought)
                self._thought = []
            elif sum(map(len, self._thought)) > MAX_OPENED_CHARS:
                self._opened = self._inside = False
                yield "".join(self._thought)
                self._thought = []
            return
        if head:
            yield ThinkingDelta(text=head) if inside else head
