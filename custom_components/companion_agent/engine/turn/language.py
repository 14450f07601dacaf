"""A reply in the wrong language: caught before it is spoken, asked for again once.

The system prompt states the language; small models still drift (Qwen into Chinese,
Llama into English), and a Piper voice for one language cannot speak another. The check
is cheap and deterministic: the script of the first letters of each round's reply.

- Expected: the script of the conversation's language (``ToolContext.language``, the
  voice's), and the script of the person's own words this turn (someone who writes
  English to a Chinese voice gets English). Unknown languages are not checked.
- The first text of a round waits for its first letters (a Han, kana or hangul letter
  weighs 3, a Latin or other letter 1; text in square brackets, the action tags, does not
  count). In an expected script it goes on at ``PASS_WEIGHT`` (the first token or two);
  in another it is held until ``DECIDE_WEIGHT`` confirms it, then the round is abandoned
  (its stream closed) and asked again, once per turn, with a short note after the
  person's words; what the second answer says goes through as it is.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from ..chars import script_of
from ..llm import ChatModel, LLMItem, RoundEnd
from ..messages import ChatMessage, UserMessage
from ..tools.contract import ToolSpec
from .prompt import language_name, persons_words

LOGGER = logging.getLogger(__name__)

PASS_WEIGHT = 2
"""An answer whose first letters are in an expected script goes on at once (one token)."""
DECIDE_WEIGHT = 12
"""An answer in another script is held until this much says it really is."""
MAX_HELD_CHARS = 200
WIDE_SCRIPTS = frozenset({"han", "kana", "hangul"})
LATIN_LANGUAGES = frozenset(
    {"en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "no", "nb", "nn", "fi", "is"}
    | {"pl", "cs", "sk", "sl", "hr", "bs", "hu", "ro", "tr", "vi", "id", "ms", "ca", "eu"}
    | {"gl", "et", "lv", "lt", "sq", "af", "sw", "tl", "cy", "ga", "lb", "mt"}
)
_TAGS = re.compile(r"\[[^\]\n]{0,40}\]")
_SCRIPTS: dict[str, frozenset[str]] = {
    "zh": frozenset({"han"}),
    "ja": frozenset({"han", "kana"}),
    "ko": frozenset({"hangul", "han"}),
    "el": frozenset({"greek"}),
    "he": frozenset({"hebrew"}),
    "th": frozenset({"thai"}),
    **{tag: frozenset({"cyrillic"}) for tag in ("ru", "uk", "bg", "be", "mk", "kk")},
    **{tag: frozenset({"arabic"}) for tag in ("ar", "fa", "ur")},
    **{tag: frozenset({"devanagari"}) for tag in ("hi", "mr", "ne")},
    **{tag: frozenset({"latin"}) for tag in LATIN_LANGUAGES},
}


def language_scripts(tag: str) -> frozenset[str]:
    """Return the scripts a language is written in; empty when this table does not know it."""
    return _SCRIPTS.get(tag.lower().split("-", maxsplit=1)[0], frozenset())


def dominant_script(text: str) -> tuple[str | None, int]:
    """Return the script most of the letters of ``text`` are in, and their total weight."""
    weights: Counter[str] = Counter()
    for char in _TAGS.sub(" ", text):
        if (script := script_of(char)) is not None:
            weights[script] += 3 if script in WIDE_SCRIPTS else 1
    if not weights:
        return None, 0
    return weights.most_common(1)[0][0], weights.total()


class LanguageCheck:
    """A ``ChatModel`` for one turn: the inner model, its replies checked for their script."""

    def __init__(self, model: ChatModel, language: str, messages: Sequence[ChatMessage]) -> None:
        """Expect ``language`` (and the script of the person's words in ``messages``)."""
        self._model = model
        self._language = language
        self._expected = language_scripts(language)
        said = next((m.content for m in reversed(messages) if isinstance(m, UserMessage)), "")
        script, weight = dominant_script(persons_words(said))
        if self._expected and script is not None and weight >= DECIDE_WEIGHT // 2:
            self._expected |= {script}
        self._retried = False

    def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Stream one response; ask again once if it starts in another script."""
        return self._checked(messages, tools)

    async def _checked(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Hold the first text until its script is known; pass or retry, then stream on."""
        held = ""
        deciding = bool(self._expected) and not self._retried
        stream = self._model.stream_with_tools(messages, tools)
        try:
            async for item in stream:
                if not deciding:
                    yield item
                    continue
                if isinstance(item, str):
                    held += item
                    script, weight = dominant_script(held)
                    expected = script in self._expected and weight >= PASS_WEIGHT
                    if not expected and weight < DECIDE_WEIGHT and len(held) < MAX_HELD_CHARS:
                        continue
                elif not isinstance(item, RoundEnd) or not held:
                    yield item
                    continue
                deciding = False
                ended = isinstance(item, RoundEnd)
                # a round that called tools is never asked again
                calls = isinstance(item, RoundEnd) and bool(item.tool_calls)
                if not calls and self._wrong(held, whole=ended):
                    break
                yield held
                if isinstance(item, RoundEnd):
                    yield item
            else:
                if deciding and held:
                    yield held
                return
        finally:
            closer = getattr(stream, "aclose", None)
            if closer is not None:
                await closer()  # an abandoned answer's stream closes now, not when collected
        async for item in self._model.stream_with_tools(self._corrected(messages), tools):
            yield item

    def _wrong(self, text: str, *, whole: bool) -> bool:
        """Say whether ``text`` is in a script not expected, and a retry is left for it.

        A ``whole`` reply that ended before the usual weight is judged on half of it.
        """
        script, weight = dominant_script(text)
        enough = DECIDE_WEIGHT // 2 if whole else DECIDE_WEIGHT
        if self._retried or script is None or weight < enough or script in self._expected:
            return False
        self._retried = True
        LOGGER.info(
            "The model answered in %s script; the conversation is in %s: asking again once",
            script,
            self._language,
        )
        return True

    def _corrected(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        """Return the messages with a short note on the language after the person's words."""
        note = f"\n\n(Answer in {language_name(self._language)}.)"
        out = list(messages)
        for at in range(len(out) - 1, -1, -1):
            message = out[at]
            if isinstance(message, UserMessage):
                out[at] = replace(message, content=message.content + note)
                break
        return out
