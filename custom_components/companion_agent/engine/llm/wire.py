"""The OpenAI chat wire format: engine messages out, SDK errors and usage in."""

from __future__ import annotations

import openai
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from .. import sdk_http
from ..errors import LLMAuthError, LLMConnectionError, LLMError
from ..messages import AssistantMessage, ChatMessage, SystemMessage, UserMessage


def to_wire(message: ChatMessage) -> ChatCompletionMessageParam:
    """Convert an engine message to the OpenAI chat format."""
    match message:
        case SystemMessage(content=content):
            return {"role": "system", "content": content}
        case UserMessage(content=content):
            return {"role": "user", "content": content}
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
