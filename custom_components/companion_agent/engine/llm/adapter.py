"""One adapter over ``openai.AsyncOpenAI`` for any OpenAI-compatible server.

Vendor quirks are normalised here and nowhere else: ``reasoning_content`` / ``reasoning``
fields and ``<think>`` blocks become ``ThinkingDelta``; tool-call fragments are joined by
index (or by id where a server sends no index); a missing ``finish_reason`` is inferred.
The SDK retries only while opening the request, before the first token. Works on the
``openai`` SDK's 2.x (httpx) and 3.x (httpx2) alike: see ``sdk_http``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

import openai
from openai.types.chat import ChatCompletionChunk

from .. import sdk_http
from ..errors import LLMError
from ..events import ThinkingDelta
from ..messages import ChatMessage
from ..tools.contract import ToolSpec
from .done import DoneWatch
from .stream import LLMItem, RoundEnd, ToolCallAccumulator
from .think import ThinkSplitter
from .wire import map_error, reasoning_text, usage_of, wire_messages

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMSettings:
    """Where the model lives and how long a voice turn may wait for it.

    ``first_token_timeout`` bounds connecting, the SDK's retries and the first chunk
    together; ``chunk_timeout`` bounds every gap between two chunks after that.
    """

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    connect_timeout: float = 3.0
    first_token_timeout: float = 8.0
    chunk_timeout: float = 10.0
    max_retries: int = 2


class OpenAIChatModel:
    """Stream chat completions with tools from an OpenAI-compatible server."""

    def __init__(
        self, settings: LLMSettings, *, http_client: sdk_http.package.AsyncClient | None = None
    ) -> None:
        """Create the SDK client; pass the host's shared HTTP client where there is one."""
        self.settings = settings
        self._owns_http = http_client is None
        self._timeout = openai.Timeout(
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
        except (openai.OpenAIError, sdk_http.package.HTTPError, TimeoutError) as err:
            raise map_error(err) from err

    async def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        response_format: Mapping[str, object] | None = None,
    ) -> AsyncIterator[LLMItem]:
        """Stream one response; errors end the stream with a ``RoundEnd`` that carries them.

        ``response_format`` is sent as it is (a JSON Schema answer, for memory extraction).

        A stream that stops before the server said it was done (no ``finish_reason`` and no
        ``[DONE]``) is cut: its tool calls are reported as cut, never as complete.
        """
        calls = ToolCallAccumulator()
        splitter = ThinkSplitter()
        finish_reason: str | None = None
        usage: dict[str, int] = {}
        error: LLMError | None = None
        done = DoneWatch()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.settings.first_token_timeout) as budget:
                stream = await self._open(messages, tools, response_format)
                done.watch(stream.response)
                async with stream:
                    async for chunk in stream:
                        budget.reschedule(loop.time() + self.settings.chunk_timeout)
                        usage = usage_of(chunk) or usage
                        for choice in chunk.choices:
                            delta = choice.delta
                            if reasoning := reasoning_text(delta):
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
        except (openai.OpenAIError, sdk_http.package.HTTPError, TimeoutError) as err:
            error = map_error(err)
            LOGGER.warning("Model stream failed: %s", error)
        if error is None and finish_reason is None and not done.seen:
            error = LLMError("the model server stopped before the answer ended", retryable=True)
            LOGGER.warning("Model stream cut: no finish_reason and no [DONE]")
        for item in splitter.flush():
            yield item
        if error is not None:
            yield RoundEnd(error=error, usage=usage, cut_tool_calls=calls.partial())
            return
        if finish_reason is None:
            finish_reason = "tool_calls" if calls else "stop"
        yield RoundEnd(tool_calls=calls.complete(), finish_reason=finish_reason, usage=usage)

    async def _open(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        response_format: Mapping[str, object] | None = None,
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Send the request; the SDK retries only here, before the first token."""
        s = self.settings
        extra: dict[str, object] = {}
        if response_format is not None:
            extra["response_format"] = dict(response_format)
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
            messages=wire_messages(messages),
            stream=True,
            stream_options={"include_usage": True},
            timeout=self._timeout,
            **extra,
        )
