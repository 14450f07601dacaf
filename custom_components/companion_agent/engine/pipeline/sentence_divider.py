"""The ``sentence_divider`` stage: text forwarded as it streams, cut into sentences.

The boundary rules live in ``boundaries.py`` (``BoundaryScanner``). In the stream:
every ``TextDelta`` goes on at once, and each sentence follows the text it was cut from,
right where it was cut: a delta that holds the end of a sentence and the start of the
next goes on as two deltas with the ``SentenceOutput`` between them (a delta whose
``model_text`` is not its ``text``, such as a host notice, keeps all of its model text
on the first piece). So a sentence's text always precedes it, and the text after it
follows it unless the divider had to read on to decide (``etc. Then``, an ellipsis, an
emoji after a mark, the length cap).

``ThinkingDelta`` passes straight through without ending the sentence in progress; any
other non-text item (a tool call, anything unknown) first releases the text in progress
as a sentence, then passes through, so order is kept. UTF-16 surrogate halves split
across deltas are joined before anything else looks at them, in ``text`` and, for a delta
whose ``model_text`` is its ``text``, in ``model_text`` too.

Each sentence leaves as ``SentenceOutput(display_text=s, tts_text=s)``; the later stages
refine each field.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..events import OutputItem, SentenceOutput, TextDelta, ThinkingDelta
from .boundaries import BoundaryScanner
from .stage import DEFAULT_CONFIG, PipelineConfig, Stage


def _sentence(text: str) -> SentenceOutput:
    """Wrap one sentence; later stages refine each field."""
    return SentenceOutput(display_text=text, tts_text=text)


def _join_surrogates(text: str) -> str:
    """Join UTF-16 surrogate halves that arrived in separate deltas."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


class _TextRoute:
    """One stream's text path: surrogate repair, the divider, and where each cut falls."""

    __slots__ = ("_at", "_divider", "_fresh", "_half", "_half_model", "_pending", "_pending_at")

    def __init__(self, config: PipelineConfig) -> None:
        """Start a stretch with nothing held."""
        self._divider = BoundaryScanner(config)
        self._half = self._half_model = ""
        self._at = 0
        self._pending = ""
        self._pending_at = 0
        self._fresh = True

    def text(self, delta: TextDelta) -> TextDelta | list[OutputItem]:
        """Route one delta; return it, or its pieces with the sentences it completes."""
        text = delta.text
        if self._half or "\ud800" <= text[-1:] <= "\udbff":
            delta = self._repair(delta)
            text = delta.text
            if not (text or delta.model_text):
                return []
        start = self._at
        self._at = end = start + len(text)
        if self._fresh:
            kept = text.lstrip()
            self._pending_at = end - len(kept)
            self._fresh = not kept
            self._pending = kept
        else:
            self._pending += text
        found = self._divider.feed(text)
        if not found:
            return delta
        out: list[OutputItem] = []
        done = 0
        for sentence in found:
            if (cut := self._place(sentence) - start) > done:
                out.append(self._piece(delta, done, cut))
                done = cut
            out.append(_sentence(sentence))
        if done < len(text) or not done:
            out.append(self._piece(delta, done, len(text)))
        return out

    def end(self) -> list[OutputItem]:
        """End the stretch of text: release everything held."""
        out: list[OutputItem] = []
        if half := self._half:
            self._at += len(half)
            self._divider.feed(half)
            out.append(TextDelta(text=half, model_text=self._half_model))
            self._half = self._half_model = ""
        if (rest := self._divider.flush()) is not None:
            out.append(_sentence(rest))
        self._pending, self._fresh = "", True
        return out

    def _repair(self, delta: TextDelta) -> TextDelta:
        """Return ``delta`` with a held surrogate half joined on and a trailing one held."""
        aligned = delta.model_text == delta.text
        text = _join_surrogates(self._half + delta.text) if self._half else delta.text
        model = delta.model_text
        if self._half_model:
            model = _join_surrogates(self._half_model + model)
        self._half = self._half_model = ""
        if "\ud800" <= text[-1:] <= "\udbff":
            text, self._half = text[:-1], text[-1]
            if aligned:
                model, self._half_model = model[:-1], model[-1]
        return TextDelta(text=text, model_text=model)

    @staticmethod
    def _piece(delta: TextDelta, start: int, end: int) -> TextDelta:
        """Return ``delta.text[start:end]`` as a delta; other model text rides on the first."""
        text = delta.text
        if start == 0 and end == len(text):
            return delta
        piece = text[start:end]
        if delta.model_text == text:
            return TextDelta(text=piece, model_text=piece)
        return TextDelta(text=piece, model_text="" if start else delta.model_text)

    def _place(self, sentence: str) -> int:
        """Return the stream position where ``sentence`` ends, and forget the text up to it."""
        pending = self._pending
        at = 0 if pending.startswith(sentence) else max(pending.find(sentence), 0)
        self._pending = pending[at + len(sentence) :]
        self._pending_at += at + len(sentence)
        return self._pending_at


def sentence_divider(config: PipelineConfig = DEFAULT_CONFIG) -> Stage:
    """Return the stage that forwards text deltas and adds ``SentenceOutput`` sentences."""

    async def apply(stream: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Cut text into sentences; pass everything else through in order."""
        route = _TextRoute(config)
        async for item in stream:
            match item:
                case TextDelta():
                    match route.text(item):
                        case TextDelta() as single:
                            yield single
                        case pieces:
                            for out in pieces:
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
