"""One model response, read chunk by chunk into text, thinking, tool calls and how it ended.

The adapter feeds every raw chunk here (``chunks.py`` reads the vendor shapes); out come
the items the tool loop sees. On the way:

- ``<think>`` blocks become thinking (``think.py``); tool calls written as text become
  calls (``text_calls.py``), never text;
- thinking is scrubbed of secrets before it leaves (``StreamRedactor``); when an offered
  tool has secret arguments, a round's thinking waits for its end, so that the values the
  model then passes as secret are masked in it too;
- a reply or thinking that loops (``repetition.py``) stops the round: ``stopped`` says so
  and the adapter stops reading (closing the stream makes the server stop generating);
- the end: ``finish_reason`` inferred when missing, ``tool_calls`` when calls came with
  ``stop``; calls of a round that did not end properly (cut, stopped, ``length``) are
  reported as cut and never run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from enum import Enum
from typing import Literal

from ..errors import LLMError
from ..events import ThinkingDelta
from ..json_types import JSONObject
from ..messages import ToolCallRequest
from ..redaction import StreamRedactor, secret_fields, secret_values
from ..tools.contract import ToolSpec, parse_arguments
from .chunks import deltas_of, usage_of
from .repetition import RepetitionWatch
from .stream import LLMItem, PartialToolCall, RoundEnd, ToolCallAccumulator
from .text_calls import TextToolCalls
from .think import ThinkSplitter

LOGGER = logging.getLogger(__name__)

type Stop = Literal["text", "thinking"]


class TemplateThinking(Enum):
    """What one reply showed of whether the server's chat template opens ``<think>`` itself."""

    OPENS = "opens"
    """A lone ``</think>``: the template opened the block."""
    DOES_NOT_OPEN = "does_not_open"
    """Split as opened, the block never closed: the template does not open it."""
    UNSHOWN = "unshown"
    """Nothing either way."""


class RoundReader:
    """Read one streamed response; ``feed`` each chunk, then ``end`` it once."""

    def __init__(self, tools: Sequence[ToolSpec], *, thinking_opened: bool = False) -> None:
        """Know the offered tools: their names (for written calls) and secret arguments.

        ``thinking_opened``: the server's template opens ``<think>`` itself (``think.py``).
        """
        self._secret = {tool.name: secret_fields(tool.parameters) for tool in tools}
        self._calls = ToolCallAccumulator()
        self._think = ThinkSplitter(opened=thinking_opened)
        self._written = TextToolCalls(self._secret) if tools else None
        self._thinking = StreamRedactor(hold_all=any(self._secret.values()))
        self._said = RepetitionWatch()
        self._thought = RepetitionWatch()
        self.finish_reason: str | None = None
        self.usage: dict[str, int] = {}
        self.stopped: Stop | None = None
        """Set when the model started looping: read no further."""

    def feed(self, chunk: JSONObject) -> list[LLMItem]:
        """Read one chunk; return the text and thinking it releases, in order."""
        self.usage = usage_of(chunk) or self.usage
        out: list[LLMItem] = []
        for part in deltas_of(chunk):
            if part.reasoning:
                self._thinking_in(part.reasoning, out)
            for piece in self._think.feed(part.content) if part.content else ():
                self._route(piece, out)
            for fragment in part.tool_calls:
                self._calls.add(fragment.index, fragment.call_id, fragment.name, fragment.arguments)
            self.finish_reason = part.finish_reason or self.finish_reason
        return out

    @property
    def template_thinking(self) -> TemplateThinking:
        """Say what this reply showed of whether the template opens ``<think>``."""
        if self._think.lone_close:
            return TemplateThinking.OPENS
        return TemplateThinking.DOES_NOT_OPEN if self._think.unclosed else TemplateThinking.UNSHOWN

    def end(self, error: LLMError | None, *, done: bool) -> list[LLMItem]:
        """Release what is held and return the round's last items, its ``RoundEnd`` last.

        ``done``: the server said the answer ended (``[DONE]``), finish reason or not.
        """
        out: list[LLMItem] = []
        if self.stopped is None:
            for piece in self._think.flush():
                self._route(piece, out)
            if self._written is not None and (rest := self._written.flush()):
                self._text_in(rest, out)
        calls = self._marked((*self._calls.complete(), *self._written_calls()))
        if thinking := self._thinking.flush():
            out.append(ThinkingDelta(text=thinking))
        out.append(self._round_end(error, calls, done=done))
        return out

    def _round_end(
        self, error: LLMError | None, calls: tuple[ToolCallRequest, ...], *, done: bool
    ) -> RoundEnd:
        """Decide how the round ended: answered, calling tools, cut, or stopped."""
        if error is None and self.stopped is not None:
            what = "while thinking" if self.stopped == "thinking" else "in its answer"
            LOGGER.warning("The model repeated itself %s; stopped reading it", what)
            if self.stopped == "text" and not calls:
                return RoundEnd(finish_reason="repetition", usage=self.usage)
            error = LLMError(f"the model repeated itself {what}", retryable=False)
        if error is None and self.finish_reason is None and not done:
            LOGGER.warning("Model stream cut: no finish_reason and no [DONE]")
            error = LLMError("the model server stopped before the answer ended", retryable=True)
        if error is None and self.finish_reason == "length" and calls:
            error = LLMError("the answer reached the model's length limit", retryable=False)
        if error is not None:
            cut = (*self._calls.partial(), *self._written_partial())
            return RoundEnd(error=error, usage=self.usage, cut_tool_calls=cut)
        reason = self.finish_reason
        if calls:
            reason = "tool_calls"
        elif reason in (None, "tool_calls"):
            reason = "stop"
        return RoundEnd(tool_calls=calls, finish_reason=reason, usage=self.usage)

    def _route(self, piece: str | ThinkingDelta, out: list[LLMItem]) -> None:
        """Send a piece of content where it belongs: thinking, or text."""
        if isinstance(piece, ThinkingDelta):
            self._thinking_in(piece.text, out)
        else:
            self._text_in(piece, out)

    def _thinking_in(self, text: str, out: list[LLMItem]) -> None:
        """Take thinking: watch it for loops, release it scrubbed."""
        if self.stopped is not None:
            return
        if self._thought.feed(text):
            self.stopped = "thinking"
        if shown := self._thinking.feed(text):
            out.append(ThinkingDelta(text=shown))

    def _text_in(self, text: str, out: list[LLMItem]) -> None:
        """Take reply text: calls written in it come out; watch the rest for loops."""
        if self.stopped is not None:
            return
        if self._written is not None:
            text = self._written.feed(text)
        if text:
            out.append(text)
            if self._said.feed(text):
                self.stopped = "text"

    def _written_calls(self) -> tuple[ToolCallRequest, ...]:
        """Return the calls the model wrote as text."""
        if self._written is None or not self._written.calls:
            return ()
        LOGGER.debug("The model wrote %d tool call(s) as text", len(self._written.calls))
        return tuple(self._written.calls)

    def _written_partial(self) -> tuple[PartialToolCall, ...]:
        """Return the written calls of a round that did not end properly, as cut."""
        calls = self._written.calls if self._written is not None else ()
        return tuple(PartialToolCall(call_id=c.call_id, name=c.name, arguments="") for c in calls)

    def _marked(self, calls: tuple[ToolCallRequest, ...]) -> tuple[ToolCallRequest, ...]:
        """Mark each call's secret arguments; mask their values in the thinking still held."""
        marked = tuple(replace(c, secret=self._secret.get(c.name, frozenset())) for c in calls)
        for call in marked:
            if call.secret:
                args = parse_arguments(call.arguments) or {}
                self._thinking.add_values(secret_values(args, call.secret))
        return marked
