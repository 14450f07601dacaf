"""What llama.cpp's server really streams for SmolLM2: the requests, a recorder, the files.

Two requests, recorded into ``streams/`` (``python -m tests.support.llama_recording`` with
the peer built rewrites them): a plain reply, and a request offering two tools where the
conversation shows the model how a call is written. SmolLM2's own chat template renders no
tools (the server drops them silently), so the model writes its call as JSON in the text,
copying the earlier examples; ``text_calls.py`` makes that a call. Greedy sampling and a
fixed seed make each reply the same every time, so a test can compare a live stream with
its recording.
"""

import asyncio
import json
import sys
import tempfile
from pathlib import Path

import httpx

from custom_components.companion_agent.engine.json_types import JSONObject
from custom_components.companion_agent.engine.llm.wire import wire_messages
from custom_components.companion_agent.engine.messages import (
    AssistantMessage,
    ChatMessage,
    SystemMessage,
    UserMessage,
)
from custom_components.companion_agent.engine.tools.contract import ToolSpec

STREAMS = Path(__file__).resolve().parent / "streams"
PLAIN = "llamacpp_smollm2_text"
TOOL_REQUEST = "llamacpp_smollm2_tool_call_as_text"
TURN_ON = ToolSpec(
    name="HassTurnOn",
    description="Turns on/opens a device or entity",
    parameters={"type": "object", "properties": {"name": {"type": "string"}}},
)
TURN_OFF = ToolSpec(
    name="HassTurnOff",
    description="Turns off/closes a device or entity",
    parameters={"type": "object", "properties": {"name": {"type": "string"}}},
)
TOOLS = (TURN_ON, TURN_OFF)
GREETING: tuple[ChatMessage, ...] = (
    SystemMessage(content="You are a friendly home assistant. Answer in one short sentence."),
    UserMessage(content="Hello, who are you?"),
)
SHOWN_HOW = (
    SystemMessage(content="You control a home. To act, answer with only a JSON tool call."),
    UserMessage(content="Turn on the hall light"),
    AssistantMessage(content='{"name": "HassTurnOn", "arguments": {"name": "hall light"}}'),
    UserMessage(content="Turn off the desk lamp"),
    AssistantMessage(content='{"name": "HassTurnOff", "arguments": {"name": "desk lamp"}}'),
)
"""A conversation that shows the model how a call is written (its template shows no tools)."""
KITCHEN_ON: tuple[ChatMessage, ...] = (*SHOWN_HOW, UserMessage(content="Turn on the kitchen light"))
MAX_TOKENS = 60


def request(
    model: str, messages: tuple[ChatMessage, ...], tools: tuple[ToolSpec, ...]
) -> JSONObject:
    """Return the streamed request body the adapter would send for ``messages``."""
    body: JSONObject = {
        "model": model,
        "messages": json.loads(json.dumps(wire_messages(messages))),
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": MAX_TOKENS,
    }
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
    return body


RECORDINGS = {PLAIN: (GREETING, ()), TOOL_REQUEST: (KITCHEN_ON, TOOLS)}
"""Each recording's conversation and offered tools."""


async def record(base_url: str, body: JSONObject) -> list[str]:
    """Send ``body`` to ``base_url``'s chat completions; return each SSE ``data:`` payload."""
    payloads: list[str] = []
    async with (
        httpx.AsyncClient(timeout=60.0) as client,
        client.stream("POST", f"{base_url}/chat/completions", json=body) as response,
    ):
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                payloads.append(line.removeprefix("data: "))
    return payloads


def shape(payload: str) -> object:
    """Return what a payload says apart from what varies: id, time, timings, cache hits."""
    if payload == "[DONE]":
        return payload
    value = json.loads(payload)
    for varying in ("id", "created", "timings"):
        value.pop(varying, None)
    if isinstance(usage := value.get("usage"), dict):
        usage.pop("prompt_tokens_details", None)
    return value


async def _rewrite(model: str) -> None:
    """Start the peer, record every request into ``streams/``, stop it."""
    from tests.support.llama import start_llama, wait_ready
    from tests.support.peer_process import stop

    with tempfile.TemporaryDirectory() as tmp:
        peer = start_llama(Path(tmp) / "llama.log")
        try:
            await wait_ready(peer)
            for name, (messages, tools) in RECORDINGS.items():
                payloads = await record(peer.url, request(model, messages, tools))
                (STREAMS / f"{name}.jsonl").write_text("\n".join(payloads) + "\n", encoding="utf-8")
                print(f"{name}: {len(payloads)} events", file=sys.stderr)
        finally:
            stop(peer.process)


if __name__ == "__main__":
    from tests.support.llama import MODEL

    asyncio.run(_rewrite(MODEL))
