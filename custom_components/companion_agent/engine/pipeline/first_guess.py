"""``first_guesses``: the turn's first sentence guessed before the next token decides it.

A sentence that ends in ``.!?`` after a word ends only once the character after it is
known: a gap ends it, ``example.com`` or ``light.kitchen`` does not (``boundaries.py``). A
model sends that character with its next token, one token's wait after the mark, and the
voice would wait for it too. So at each such point before the first sentence is decided,
``first_guesses`` tells ``on_guess`` what the first sentence's speech will be if a gap
comes next: the whole output pipeline run over the text so far, ended there, so the guess
is exactly what the turn's own pipeline will give for that end (the same tags, cleaning
and cuts). The voice may begin on it and holds its audio until the real sentence comes
(``speech/turn_speech.py``): a wrong guess is never heard.

Guessing stops at the first sentence, at the first item that is not text (a tool call
ends the sentence anyway), and when the items are not the model's text alone: a host
whose plugins transform the output does not guess (a transformer may keep state).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from ..events import OutputItem, SentenceOutput, TextDelta, ThinkingDelta
from .boundaries import BoundaryScanner
from .stage import PipelineConfig

type Pipeline = Callable[[AsyncIterator[OutputItem]], AsyncIterator[OutputItem]]
"""A fresh output pipeline (stages keep state: one per run)."""
type GuessListener = Callable[[str], None]
"""Told the speech the first sentence will have if the text so far ends it."""


async def first_guesses[Item: OutputItem](
    items: AsyncIterator[Item],
    config: PipelineConfig,
    pipeline: Callable[[], Pipeline],
    on_guess: GuessListener,
) -> AsyncIterator[Item]:
    """Pass ``items`` on unchanged; tell ``on_guess`` each likely end of the first sentence."""
    scanner = BoundaryScanner(config)
    text: list[str] = []
    guessing = True
    async for item in items:
        if guessing and isinstance(item, TextDelta):
            text.append(item.text)
            if scanner.feed(item.text):
                guessing = False  # the pipeline decides this one itself, now
            elif scanner.gap_would_end() and (guess := await _first_speech(pipeline(), text)):
                on_guess(guess)
        elif not isinstance(item, ThinkingDelta):
            guessing = False
        yield item


async def _first_speech(pipeline: Pipeline, text: list[str]) -> str | None:
    """Return the first sentence's speech of ``text`` ended where it is now, if it has any."""

    async def ended() -> AsyncIterator[OutputItem]:
        """The text so far as one delta, then its end."""
        joined = "".join(text)
        yield TextDelta(text=joined, model_text=joined)

    stream = pipeline(ended())
    try:
        async for item in stream:
            if isinstance(item, SentenceOutput) and item.tts_text:
                return item.tts_text
    finally:
        if (close := getattr(stream, "aclose", None)) is not None:
            await close()  # its stages end now, not when collected
    return None
