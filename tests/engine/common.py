"""Helpers the engine's tests share: a person's request, a finished turn, images, requests."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

from PIL import Image

from custom_components.companion_agent.engine.events import TextDelta, TurnResult
from custom_components.companion_agent.engine.tools.contract import ToolContext
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.engine.turn.request import Persona, TurnRequest
from tests.support.lines import ENGLISH


def ask(
    persona: Persona, text: str, conversation_id: str = "conv-1", **fields: object
) -> TurnRequest:
    """Return a person's request to the persona ``p1``."""
    context = ToolContext(
        conversation_id=conversation_id, user_id="alice", trace_id=f"t-{text}", agent_id="p1"
    )
    request = TurnRequest(persona=persona, text=text, context=context, lines=ENGLISH)
    return replace(request, **fields)  # type: ignore[arg-type]


async def finish(turn: Turn) -> tuple[str, TurnResult]:
    """Take every item; return the text shown and the result."""
    text = "".join([i.text async for i in turn.items() if isinstance(i, TextDelta)])
    return text, await turn.result


def picture(width: int, height: int, kind: str = "JPEG") -> bytes:
    """Return a real image of ``width`` x ``height`` in ``kind`` (a gradient, not blank)."""
    image = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    out = io.BytesIO()
    image.save(out, kind)
    return out.getvalue()


def messages_of(request: dict[str, object]) -> list[dict[str, Any]]:
    """Return the messages a request sent."""
    messages = request["messages"]
    assert isinstance(messages, list)
    return messages


def parts(request: dict[str, object]) -> list[dict[str, object]]:
    """Return every content part of a request's messages (text-only messages have none)."""
    messages = messages_of(request)
    return [part for m in messages if isinstance(m["content"], list) for part in m["content"]]
