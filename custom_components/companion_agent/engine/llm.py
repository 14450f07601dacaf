"""One adapter over ``openai.AsyncOpenAI`` for any OpenAI-compatible server.

Vendor quirks are normalised here and nowhere else: ``reasoning_content`` / ``reasoning``
fields and ``<think>`` blocks become ``ThinkingDelta``; tool-call fragments are joined by
index (or by id where a server sends no index); a missing ``finish_reason`` is inferred.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import httpx
import openai
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from .errors import LLMAuthError, LLMConnectionError, LLMError
from .events import ThinkingDelta
from .messages import AssistantMessage, ChatMessage, SystemMessage, ToolCallRequest, UserMessage
from .thinking import ThinkSplitter
from .tools.contract import ToolSpec

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMSettings:
    """Where the model lives and how long a voice turn may wait for it."""

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    connect_timeout: float = 3.0
    chunk_timeout: float = 30.0
    deadline: float = 120.0
    max_retries: int = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialToolCall:
    """A tool call the stream cut off before its arguments were complete."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundEnd:
    """The end of one model response: its tool calls, finish reason and usage."""

    kind: Literal["round_end"] = "round_end"
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cut_tool_calls: tuple[PartialToolCall, ...] = ()
    error: LLMError | None = None


type LLMItem = str | ThinkingDelta | RoundEnd


class ChatModel(Protocol):
    """What the agent core needs from a model."""

    def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Stream one response; end with exactly one ``RoundEnd``."""
        ...


@dataclass(slots=True)
class _CallBuffer:
    """Fragments of one streamed tool call."""

    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _ToolCallAccumulator:
    """Join streamed tool-call fragments into complete calls, in call order."""

    def __init__(self) -> None:
        """Start with no calls."""
        self._calls: dict[int, _CallBuffer] = {}
        self._by_id: dict[str, int] = {}

    def add(self, index: int | None, call_id: str | None, name: str | None, args: str) -> None:
        """Add one fragment; servers without an index are keyed by id, then by arrival."""
        if index is None:
            if call_id and call_id in self._by_id:
                index = self._by_id[call_id]
            elif call_id or not self._calls:
                index = len(self._calls)
            else:
                index = max(self._calls)
        buffer = self._calls.setdefault(index, _CallBuffer())
        if call_id and not buffer.call_id:
            buffer.call_id = call_id
            self._by_id[call_id] = index
        if name:
            buffer.name = name if not buffer.name else buffer.name
        if args:
            buffer.arguments.append(args)

    def __bool__(self) -> bool:
        """Return True when any call has started."""
        return bool(self._calls)

    def complete(self) -> tuple[ToolCallRequest, ...]:
        """Return the calls in index order, inventing ids a server left out."""
        return tuple(
            ToolCallRequest(
                call_id=buf.call_id or f"call_{index}",
                name=buf.name,
                arguments="".join(buf.arguments),
            )
            for index, buf in sorted(self._calls.items())
        )

    def partial(self) -> tuple[PartialToolCall, ...]:
        """Return every started call as cut off."""
        return tuple(
            PartialToolCall(call_id=c.call_id, name=c.name, arguments=c.arguments)
            for c in self.complete()
        )


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
        case openai.APITimeoutError() | httpx.TimeoutException() | TimeoutError():
            return LLMConnectionError("the model server did not answer in time")
        case openai.APIConnectionError() | httpx.TransportError():
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


def _reasoning_text(delta: object) -> str:
    """Return the reasoning text of a delta, whichever field the server uses."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


class OpenAIChatModel:
    """Stream chat completions with tools from an OpenAI-compatible server."""

    def __init__(
        self, settings: LLMSettings, *, http_client: httpx.AsyncClient | None = None
    ) -> None:
        """Create the SDK client; pass the host's shared HTTP client where there is one."""
        self.settings = settings
        self._owns_http = http_client is None
        self._timeout = httpx.Timeout(
            connect=settings.connect_timeout,
            read=settings.chunk_timeout,
            write=10.0,
            pool=settings.connect_timeout,
        )
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",
            max_retries=settings.max_retries,
            timeout=self._timeout,
            http_client=http_client,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections, unless the host lent its own client."""
        if self._owns_http:
            await self._client.close()

    async def list_models(self) -> list[str]:
        """Return the model ids the server offers; raise ``LLMError`` when it cannot."""
        try:
            async with asyncio.timeout(self.settings.connect_timeout * 3):
                page = await self._client.models.list()
                return [model.id async for model in page]
        except (openai.OpenAIError, httpx.HTTPError, TimeoutError) as err:
            raise map_error(err) from err

    async def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Stream one response; errors end the stream with a ``RoundEnd`` that carries them."""
        calls = _ToolCallAccumulator()
        splitter = ThinkSplitter()
        finish_reason: str | None = None
        usage: dict[str, int] = {}
        error: LLMError | None = None
        try:
            async with asyncio.timeout(self.settings.deadline):
                stream = await self._open(messages, tools)
                async with stream:
                    async for chunk in stream:
                        usage = _usage(chunk) or usage
                        for choice in chunk.choices:
                            delta = choice.delta
                            if reasoning := _reasoning_text(delta):
                                yield ThinkingDelta(text=reasoning)
                            if delta.content:
                                for item in splitter.feed(delta.content):
                                    yield item
                            for tc in delta.tool_calls or ():
                                fn = tc.function
                                calls.add(
                                    tc.index,
                                    tc.id,
                                    fn.name if fn else None,
                                    (fn.arguments or "") if fn else "",
                                )
                            finish_reason = choice.finish_reason or finish_reason
        except (openai.OpenAIError, httpx.HTTPError, TimeoutError) as err:
            error = map_error(err)
            LOGGER.warning("Model stream failed: %s", error)
        for item in splitter.flush():
            yield item
        if error is not None:
            yield RoundEnd(error=error, usage=usage, cut_tool_calls=calls.partial())
            return
        if finish_reason is None:
            finish_reason = "tool_calls" if calls else "stop"
        yield RoundEnd(tool_calls=calls.complete(), finish_reason=finish_reason, usage=usage)

    async def _open(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Send the request; the SDK retries only here, before the first token."""
        s = self.settings
        extra: dict[str, object] = {}
        if s.temperature is not None:
            extra["temperature"] = s.temperature
        if s.max_tokens is not None:
            extra["max_tokens"] = s.max_tokens
        if tools:
            extra["tools"] = [
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
        return await self._client.chat.completions.create(  # type: ignore[call-overload,no-any-return]
            model=s.model,
            messages=[to_wire(m) for m in messages],
            stream=True,
            stream_options={"include_usage": True},
            timeout=self._timeout,
            **extra,
        )


def _usage(chunk: ChatCompletionChunk) -> dict[str, int]:
    """Return the token counts a chunk carries, if any."""
    if chunk.usage is None:
        return {}
    return {
        "prompt_tokens": chunk.usage.prompt_tokens,
        "completion_tokens": chunk.usage.completion_tokens,
        "total_tokens": chunk.usage.total_tokens,
    }
