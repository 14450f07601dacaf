"""sentence_divider: cut the token stream into sentences the moment each one is decided.

The boundary rules live in ``boundaries.py`` (``SentenceDivider``). In the stream:
``<think>…</think>`` inside text tokens, even split across chunks, becomes
``ThinkingDelta`` and never reaches a sentence, so it is never spoken; ``ThinkingDelta``
from the adapter passes straight through without ending the sentence in progress; any
other non-text item (tool call, turn result, anything unknown) first releases the text
in progress as a sentence, then passes through, so order is kept. UTF-16 surrogate
halves split across chunks are joined before anything else looks at them.

Each sentence leaves as ``SentenceOutput(display_text=s, tts_text=s)``; the later stages
refine each field.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable

from ..events import SentenceOutput, ThinkingDelta
from ..thinking import ThinkSplitter
from .boundaries import SentenceDivider
from .config import DEFAULT_CONFIG, PipelineConfig
from .stage import Stage


def _sentence(text: str) -> SentenceOutput:
    """Wrap one sentence; later stages refine each field."""
    return SentenceOutput(display_text=text, tts_text=text)


def _join_surrogates(text: str) -> str:
    """Join UTF-16 surrogate halves that arrived in separate chunks."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


class _TextRoute:
    """One turn's text path: surrogate repair, ``<think>`` split, then the divider."""

    __slots__ = ("_divider", "_held", "_seen_tag", "_thinking")

    def __init__(self, config: PipelineConfig) -> None:
        """Start outside any thinking block with nothing held."""
        self._divider = SentenceDivider(config)
        self._thinking = ThinkSplitter()
        self._held = ""
        self._seen_tag = False

    def text(self, chunk: str) -> list[SentenceOutput | ThinkingDelta]:
        """Route one text token; return the sentences and thinking it releases."""
        if self._held:
            chunk, self._held = _join_surrogates(self._held + chunk), ""
        if chunk and "\ud800" <= chunk[-1] <= "\udbff":
            chunk, self._held = chunk[:-1], chunk[-1]
        if not self._seen_tag and "<" not in chunk:
            return [_sentence(s) for s in self._divider.feed(chunk)]
        self._seen_tag = True
        return self._route(self._thinking.feed(chunk))

    def end(self) -> list[SentenceOutput | ThinkingDelta]:
        """End the stretch of text: release everything held, reset thinking state."""
        held, self._held = self._held, ""
        out = self._route([*self._thinking.feed(held), *self._thinking.flush()])
        self._thinking = ThinkSplitter()
        if (rest := self._divider.flush()) is not None:
            out.append(_sentence(rest))
        return out

    def _route(self, parts: Iterable[str | ThinkingDelta]) -> list[SentenceOutput | ThinkingDelta]:
        """Send text parts to the divider; keep thinking parts as they are, in order."""
        out: list[SentenceOutput | ThinkingDelta] = []
        for part in parts:
            match part:
                case str():
                    out.extend(_sentence(s) for s in self._divider.feed(part))
                case ThinkingDelta():
                    out.append(part)
        return out


def sentence_divider(config: PipelineConfig = DEFAULT_CONFIG) -> Stage:
    """Return the stage that turns text tokens into ``SentenceOutput`` sentences."""

    async def apply(stream: AsyncIterable[object]) -> AsyncIterator[object]:
        """Cut text into sentences; pass everything else through in order."""
        route = _TextRoute(config)
        async for item in stream:
            match item:
                case str():
                    for out in route.text(item):
                        yield out
                case ThinkingDelta():
                    yield item
                case _:
                    for out in route.end():
                        yield out
                    yield item
        for out in route.end():
            yield out

    return Stage(name="sentence_divider", apply=apply)
