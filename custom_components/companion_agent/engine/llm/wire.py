"""The OpenAI chat wire format: engine messages out; raw chunks and SDK errors in."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Literal, cast

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionContentPartParam,
    ChatCompletionMessageParam,
)

from .. import sdk_http
from ..errors import LLMAuthError, LLMConnectionError, LLMError
from ..json_types import JSONObject
from ..messages import (
    AssistantMessage,
    ChatMessage,
    ImagePart,
    SystemMessage,
    ToolMessage,
    UserMessage,
)


def wire_messages(messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    """Convert a conversation to the OpenAI chat format, images as content parts.

    A tool message cannot carry an image there: the images of a round's tool results
    follow its last result, in one user message naming where each came from.
    """
    out: list[ChatCompletionMessageParam] = []
    taken: list[ImagePart] = []
    for message in messages:
        if taken and not isinstance(message, ToolMessage):
            out.append(_images_message(taken))
            taken = []
        out.append(to_wire(message))
        if isinstance(message, ToolMessage):
            taken.extend(message.images)
    if taken:
        out.append(_images_message(taken))
    return out


def to_wire(message: ChatMessage) -> ChatCompletionMessageParam:
    """Convert an engine message to the OpenAI chat format (a tool result's images aside)."""
    match message:
        case SystemMessage(content=content):
            return {"role": "system", "content": content}
        case UserMessage(content=content, images=()):
            return {"role": "user", "content": content}
        case UserMessage(content=content, images=images):
            parts: list[ChatCompletionContentPartParam] = [{"type": "text", "text": content}]
            return {"role": "user", "content": [*parts, *map(image_part, images)]}
        case AssistantMessage(content=content, tool_calls=()):
            return {"role": "assistant", "content": content}
        case AssistantMessage(content=content, tool_calls=calls):
            return {
                "role": "assistant",
                "content": content or None,
                "tool_calls": [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments or "{}"},
                    }
                    for call in calls
                ],
            }
        case _:
            return {"role": "tool", "tool_call_id": message.call_id, "content": message.content}


def image_part(image: ImagePart) -> ChatCompletionContentPartParam:
    """Return an image as an ``image_url`` content part holding a data URL."""
    encoded = base64.b64encode(image.data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{encoded}"}}


def _images_message(images: Sequence[ImagePart]) -> ChatCompletionMessageParam:
    """Return the user message that shows the model the images its tools just took."""
    names = ", ".join(image.placeholder for image in images)
    text = f"{names}: what the tool call above returned, for you to look at."
    parts: list[ChatCompletionContentPartParam] = [{"type": "text", "text": text}]
    return {"role": "user", "content": [*parts, *map(image_part, images)]}


def map_error(err: Exception) -> LLMError:
    """Translate an SDK or transport error into the engine's error types."""
    match err:
        case openai.AuthenticationError() | openai.PermissionDeniedError():
            return LLMAuthError("the model server rejected the API key", status=err.status_code)
        case openai.APITimeoutError() | sdk_http.package.TimeoutException() | TimeoutError():
            return LLMConnectionError("the model server did not answer in time")
        case openai.APIConnectionError() | sdk_http.package.TransportError():
            return LLMConnectionError("the model server could not be reached")
        case openai.APIStatusError():
            retryable = err.status_code == 429 or err.status_code >= 500
            return LLMError(
                f"the model server answered HTTP {err.status_code}",
                retryable=retryable,
                status=err.status_code,
            )
        case _:
            return LLMError(f"the model server failed: {type(err).__name__}", retryable=False)


def raw_chunk(chunk: ChatCompletionChunk) -> JSONObject:
    """Return a streamed chunk as the server sent it, whatever SDK version parsed it.

    The SDK builds chunks without validating them and keeps unknown fields, so its
    JSON dump is the server's own JSON (reasoning fields, arguments sent as objects…).
    """
    return cast(JSONObject, chunk.to_dict(mode="json", warnings=False))


type RejectedOption = Literal["stream_options", "tools"]

_TOOL_REFUSALS = (
    "does not support tool",  # Ollama: "<model> does not support tools"
    "tools with stream",  # llama.cpp before tool streaming: "Cannot use tools with stream"
    "tools param requires",  # llama.cpp without --jinja
    "tool choice requires",  # vLLM without --enable-auto-tool-choice
    "failed to parse tools",
    "tools are not supported",
    "tool calling is not supported",
    "function calling is not",
    "argument supplied: tools",
    "unknown parameter: 'tools'",
)


def rejected_option(err: openai.APIStatusError) -> RejectedOption | None:
    """Say which optional part of a request the server refused, if that is why it failed.

    Servers refuse ``stream_options`` they do not know (Azure before 2024-09, proxies:
    "Unrecognized request argument supplied: stream_options", "Unknown parameter") and
    ``tools`` for a model or server without tool support (messages in ``_TOOL_REFUSALS``).
    """
    if err.status_code not in (400, 422, 500, 501):
        return None
    body = err.body if isinstance(err.body, dict) else {}
    text = f"{err.message} {json.dumps(body, default=str)}".lower()
    if "stream_options" in text or body.get("param") == "stream_options":
        return "stream_options"
    if any(refusal in text for refusal in _TOOL_REFUSALS) or body.get("param") == "tools":
        return "tools"
    return None


def to_wire_without_tools(messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    """Convert messages for a server that refuses tools: calls and results become text.

    Such a server (or its chat template) may refuse ``tool`` messages too; results after
    one call go in one user message (with any images they took), so roles still alternate.
    """
    names: dict[str, str] = {}
    out: list[ChatCompletionMessageParam] = []
    results: list[str] = []
    images: list[ImagePart] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            results.append(f"[result of {names.get(message.call_id, 'a tool')}: {message.content}]")
            images.extend(message.images)
            continue
        if results:
            out.append(to_wire(UserMessage(content="\n".join(results), images=tuple(images))))
            results, images = [], []
        if isinstance(message, AssistantMessage) and message.tool_calls:
            names.update((call.call_id, call.name) for call in message.tool_calls)
            said = [f"[called {c.name} with {c.arguments or '{}'}]" for c in message.tool_calls]
            content = "\n".join([*([message.content] if message.content else []), *said])
            out.append({"role": "assistant", "content": content})
        else:
            out.append(to_wire(message))
    if results:
        out.append(to_wire(UserMessage(content="\n".join(results), images=tuple(images))))
    return out
