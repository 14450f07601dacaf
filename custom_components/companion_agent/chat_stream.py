"""Translate the engine's turn items into HA ChatLog deltas."""

from __future__ import annotations

from collections.abc import AsyncIterator

from homeassistant.components.conversation import (
    AssistantContentDeltaDict,
    ToolResultContentDeltaDict,
)
from homeassistant.helpers import llm

from .engine.events import ThinkingDelta, ToolCallEvent, TurnItem, TurnResult
from .engine.json_types import JSONObject

type ChatDelta = AssistantContentDeltaDict | ToolResultContentDeltaDict


def tool_result_payload(event: ToolCallEvent) -> JSONObject:
    """Return the JSON object HA stores as a tool call's result."""
    return {"status": event.status, "result": event.result}


class ChatLogStream:
    """Feed a turn into ``ChatLog.async_add_delta_content_stream``; keep its ``TurnResult``."""

    def __init__(self, items: AsyncIterator[TurnItem]) -> None:
        """Wrap the engine's stream of one turn."""
        self._items = items
        self._announced: set[str] = set()
        self.result: TurnResult | None = None

    async def deltas(self) -> AsyncIterator[ChatDelta]:
        """Yield deltas; each tool call is recorded once, as executed outside HA."""
        open_message = False
        async for item in self._items:
            match item:
                case str() | ThinkingDelta() if not open_message:
                    yield {"role": "assistant"}
                    open_message = True
            match item:
                case str():
                    yield {"content": item}
                case ThinkingDelta(text=text):
                    yield {"thinking_content": text}
                case ToolCallEvent(status="running") as event:
                    yield self._call(event, open_message)
                    open_message = True
                case ToolCallEvent() as event:
                    if event.tool_id not in self._announced:
                        yield self._call(event, open_message)
                    yield {
                        "role": "tool_result",
                        "tool_call_id": event.tool_id,
                        "tool_name": event.tool_name,
                        "tool_result": tool_result_payload(event),
                    }
                    open_message = False
                case TurnResult() as result:
                    self.result = result

    def _call(self, event: ToolCallEvent, open_message: bool) -> AssistantContentDeltaDict:
        """Announce a tool call on the current assistant message (or a new one)."""
        self._announced.add(event.tool_id)
        tool_input = llm.ToolInput(
            id=event.tool_id, tool_name=event.tool_name, tool_args=event.args, external=True
        )
        if open_message:
            return {"tool_calls": [tool_input]}
        return {"role": "assistant", "tool_calls": [tool_input]}
