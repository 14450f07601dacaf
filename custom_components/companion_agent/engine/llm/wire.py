"""The OpenAI chat wire format: engine messages out, SDK errors and usage in."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionContentPartParam,
    ChatCompletionMessageParam,
)

from .. import sdk_http
from ..errors import LLMAuthError, LLMConnectionError, LLMError
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


def reasoning_text(delta: object) -> str:
    """Return the reasoning text of a delta, whichever field the server uses."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def usage_of(chunk: ChatCompletionChunk) -> dict[str, int]:
    """Return the token counts a chunk carries, if any."""
    if chunk.usage is None:
        return {}
    return {
        "prompt_tokens": chunk.usage.prompt_tokens,
        "completion_tokens": chunk.usage.completion_tokens,
        "total_tokens": chunk.usage.total_tokens,
    }
