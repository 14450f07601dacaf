"""Translate a turn's output items into HA ChatLog deltas, as they stream.

A tool call the engine ran is added as a tool result delta: with ``tool_result`` (the JSON
object) up to 2026.9, with ``result`` (an ``llm.ToolResult``, its ``error`` set for a
failed call) where HA's delta takes one (2026.10 on; ``tool_result`` warns there and stops
working in 2027.11). ``tool_result_delta`` is the one place that knows.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.conversation import (
    AssistantContentDeltaDict,
    ToolResultContentDeltaDict,
)
from homeassistant.core import callback
from homeassistant.helpers import llm

from ..compat import DEFAULT_STREAM_RESPONSE_CHARS
from ..engine.engine import ModelCall
from ..engine.events import OutputItem, SentenceOutput, TextDelta, ThinkingDelta, ToolCallEvent
from ..engine.json_types import JSONObject
from ..engine.pipeline import join_speech

type ChatDelta = AssistantContentDeltaDict | ToolResultContentDeltaDict
type SentenceListener = Callable[[SentenceOutput], None]
type TextListener = Callable[[str], None]


def tool_result_payload(event: ToolCallEvent) -> JSONObject:
    """Return the JSON object HA stores as a tool call's result."""
    return {"status": event.status, "result": event.result}


def tool_result_delta(event: ToolCallEvent) -> ToolResultContentDeltaDict:
    """Return the delta that adds a finished call's result, as the running HA takes it."""
    delta: dict[str, Any] = {
        "role": "tool_result",
        "tool_call_id": event.tool_id,
        "tool_name": event.tool_name,
    }
    result_type = getattr(llm, "ToolResult", None)
    takes_result = "result" in getattr(
        conversation.ToolResultContentDeltaDict, "__annotations__", {}
    )
    if result_type is None or not takes_result:
        delta["tool_result"] = tool_result_payload(event)
    else:
        delta["result"] = result_type(
            data=tool_result_payload(event), error=event.status == "error"
        )
    return delta  # type: ignore[return-value]  # HA's TypedDict names "result" from 2026.10


class ChatLogStream:
    """Feed a turn into ``ChatLog.async_add_delta_content_stream``; keep what TTS should say.

    Display text goes to the ChatLog piece by piece as the model writes it (action tags
    and thinking already removed), so HA's streaming TTS starts as early as it can;
    sentences only carry speech and actions. ``tts_opened_at`` is when (``time.time()``)
    HA's pipeline, by its own rule, opened its streaming TTS on these deltas.

    HA opens that stream after 60 characters, or on a tool call that follows text. A call
    made before the turn wrote anything would open nothing, and the short line the
    companion says while it runs (a holding line, under 60 characters) would wait for the
    answer. So such a call is announced right after the turn's first text (HA opens its
    stream on it, and the line is heard while the tool runs), or when it ends, if no text
    came meanwhile.
    """

    def __init__(
        self,
        items: AsyncIterator[OutputItem],
        on_sentence: SentenceListener | None = None,
        *,
        stream_chars: int = DEFAULT_STREAM_RESPONSE_CHARS,
        on_text: TextListener | None = None,
    ) -> None:
        """Wrap the output stream of one turn; ``on_sentence`` sees every sentence.

        ``stream_chars`` is HA's rule for opening its streaming TTS (``compat``);
        ``on_text`` is told each piece of content just before HA gets it (HA's TTS stream,
        opened on a delta, is handed the content so far: ``SpeechTurns.writing``).
        """
        self._items = items
        self._on_text = on_text
        self._stream_chars = stream_chars
        self._on_sentence = on_sentence
        self._announced: set[str] = set()
        self._held: list[ToolCallEvent] = []
        self._open = False
        self._chars = 0
        self.spoken: list[SentenceOutput] = []
        self.tts_opened_at: float | None = None

    async def deltas(self) -> AsyncIterator[ChatDelta]:
        """Yield deltas: display text as it streams, each tool call once, as run outside HA."""
        async for item in self._items:
            match item:
                case TextDelta(text=text) if text:
                    for delta in self._start():
                        yield delta
                    self._count(len(text))
                    if self._on_text is not None:
                        self._on_text(text)
                    yield {"content": text}
                    held, self._held = self._held, []
                    for event in held:  # after text: HA opens its TTS stream on the call
                        self._count(0, tool_call=True)
                        yield self._call(event)
                case SentenceOutput() as sentence:
                    if self._on_sentence is not None:
                        self._on_sentence(sentence)
                    if sentence.tts_text:
                        self.spoken.append(sentence)
                case ThinkingDelta(text=text):
                    for delta in self._start():
                        yield delta
                    yield {"thinking_content": text}
                case ToolCallEvent(status="running") as event:
                    if self.tts_opened_at is None and self._chars == 0:
                        self._held.append(event)  # announced after the first text
                        continue
                    self._count(0, tool_call=True)
                    yield self._call(event)
                case ToolCallEvent() as event:
                    self._held = [held for held in self._held if held.tool_id != event.tool_id]
                    if event.tool_id not in self._announced:
                        self._count(0, tool_call=True)
                        yield self._call(event)
                    yield tool_result_delta(event)
                    self._open = False
                    self.spoken.clear()

    def speech(self) -> str:
        """Return what TTS should say: the clean text of the last message."""
        return join_speech(self.spoken)

    def _count(self, chars: int, *, tool_call: bool = False) -> None:
        """Count the reply's characters as HA does; note when its TTS stream opens."""
        if self.tts_opened_at is not None:
            return
        opens = self._chars > 0 and tool_call
        self._chars += chars
        if opens or self._chars > self._stream_chars:
            self.tts_opened_at = time.time()

    def _start(self) -> list[ChatDelta]:
        """Open a new assistant message unless one is open."""
        if self._open:
            return []
        self._open = True
        return [{"role": "assistant"}]

    def _call(self, event: ToolCallEvent) -> AssistantContentDeltaDict:
        """Announce a tool call on the open assistant message, or on a new one."""
        self._announced.add(event.tool_id)
        tool_input = llm.ToolInput(
            id=event.tool_id, tool_name=event.tool_name, tool_args=event.args, external=True
        )
        if self._open:
            return {"tool_calls": [tool_input]}
        self._open = True
        return {"role": "assistant", "tool_calls": [tool_input]}


def trace_to(chat_log: conversation.ChatLog) -> Callable[[ModelCall], None]:
    """Return a listener that adds each model call's usage and timings to the trace."""

    @callback
    def _trace(call: ModelCall) -> None:
        """Add one call to the conversation's trace, as HA's own LLM integrations do."""
        chat_log.async_trace({"stats": call.as_trace()})

    return _trace
