"""What a chat request to the local model server carried: its messages, prompt, tools, images."""

from __future__ import annotations

import asyncio
import base64

from tests.support.llm_server import LLMServer

type Body = dict[str, object]
type Message = dict[str, object]


def messages(body: Body) -> list[Message]:
    """Return the chat messages of one request to the model server."""
    raw = body["messages"]
    assert isinstance(raw, list)
    return [message for message in raw if isinstance(message, dict)]


def system_text(body: Body) -> str:
    """Return the system prompt of a request; it must come first."""
    first = messages(body)[0]
    assert first["role"] == "system"
    return str(first["content"])


def user_text(body: Body) -> str:
    """Return the last user message of a request: the one this turn added."""
    users = [m for m in messages(body) if m["role"] == "user"]
    return str(users[-1]["content"])


def tool_names(body: Body) -> set[str]:
    """Return the names of the tools a request offers the model."""
    tools = body.get("tools")
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            names.add(str(function["name"]))
    return names


def image_parts(body: Body) -> list[bytes]:
    """Return the images (decoded) a request's messages carry."""
    found = []
    for message in messages(body):
        for part in message["content"] if isinstance(message["content"], list) else ():
            if part["type"] == "image_url":
                head, _, data = part["image_url"]["url"].partition(",")
                assert head == "data:image/jpeg;base64"
                found.append(base64.b64decode(data))
    return found


def last_user_message(server: LLMServer) -> str:
    """Return the user message the last chat request added."""
    return user_text(server.requests[-1])


def all_messages(server: LLMServer) -> str:
    """Return every message of the last chat request as one string."""
    return str(server.requests[-1]["messages"])


async def asked(server: LLMServer) -> None:
    """Return once the server has had a chat request."""
    while not server.requests:  # noqa: ASYNC110 - the server has no event to wait on
        await asyncio.sleep(0.01)
