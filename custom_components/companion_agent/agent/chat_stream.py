"""Translate a turn's output items into HA ChatLog deltas, as they stream."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

from homeassistant.components.conversation import (
    AssistantContentDeltaDict,
    ToolResultContentDeltaDict,
)
from homeassistant.helpers import llm

from ..engine.events import OutputItem, SentenceOutput, TextDelta, ThinkingDelta, ToolCallEvent
from ..engine.json_types import JSONObject
from ..engine.pipeline import join_speech

type ChatDelta = AssistantContentDeltaDict | ToolResultContentDeltaDict
type SentenceListener = Callable[[SentenceOutput], None]

HA_STREAM_CHARS = 60
"""HA's Assist pipeline opens a streaming TTS once the reply passes this many characters, or
on a tool call after text (``STREAM_RESPONSE_CHARS`` in ``assist_pipeline``, every release)."""


def tool_result_payload(event: ToolCallEvent) -> JSONObject:
    """Return the JSON object HA stores as a tool call's result."""
    return {"status": event.status, "result": event.result}


class ChatLogStream:
    """Feed a turn into ``ChatLog.async_add_delta_content_stream``; keep what TTS should say.

    Display text goes to the ChatLog piece by piece as the model writes it (action tags
    and thinking already removed), so HA's streaming TTS starts as early as it can;
    sentences only carry speech and actions. ``tts_opened_at`` is when (``time.time()``)
    HA's pipeline, by its own rule, opened its streaming TTS on these deltas.
    """

    def __init__(
        self, items: AsyncIterator[OutputItem], on_sentence: SentenceListener | None = None
    ) -> None:
        """Wrap the output stream of one turn; ``on_sentence`` sees every sentence."""
        self._items = items
        self._on_sentence = on_sentence
        self._announced: set[str] = set()
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
                    yield {"content": text}
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
                    self._count(0, tool_call=True)
                    yield self._call(event)
                case ToolCallEvent() as event:
                    if event.tool_id not in self._announced:
                        yield self._call(event)
                    yield {
                        "role": "tool_result",
                        "tool_call_id": event.tool_id,
                        "tool_name": event.tool_name,
                        "tool_result": tool_result_payload(event),
                    }
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
        if opens or self._chars > HA_STREAM_CHARS:
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
