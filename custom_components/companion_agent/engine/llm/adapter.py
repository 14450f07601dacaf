"""One adapter over ``openai.AsyncOpenAI`` for any OpenAI-compatible server.

Vendor quirks are normalised in this package and nowhere else: the request (a server that
refuses ``stream_options`` or ``tools`` is asked again without them, and remembered), the
chunks (``chunks.py`` reads every vendor's shape from the raw JSON), the round
(``round.py``: thinking, calls written as text, loops, the end). A request is retried
(``MODEL_RETRY``) only while it is being opened, before the first token, inside the
first-token deadline; the SDK's own retries are off. Works on the ``openai`` SDK's 2.x
(httpx) and 3.x (httpx2) alike: see ``sdk_http``.
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
from ..messages import ChatMessage
from ..redaction import redact_url
from ..retry import RetryPolicy
from ..tools.contract import ToolSpec
from .done import DoneWatch
from .round import RoundReader
from .stream import LLMItem
from .wire import map_error, raw_chunk, rejected_option, to_wire_without_tools, wire_messages

LOGGER = logging.getLogger(__name__)

_SDK_ERRORS = (openai.OpenAIError, sdk_http.package.HTTPError)


def _worth_retrying(error: BaseException) -> bool:
    """Say whether the server may answer a second try: no answer, 429 or a 5xx."""
    return isinstance(error, _SDK_ERRORS) and map_error(error).retryable


MODEL_RETRY = RetryPolicy(
    attempts=3, first_delay=0.5, factor=2.0, max_delay=8.0, jitter=0.25, retryable=_worth_retrying
)
"""Three tries to open a request, 0.5 s then 1 s apart (less up to a quarter, at random)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMSettings:
    """Where the model lives and how long a voice turn may wait for it.

    ``first_token_timeout`` bounds connecting, the ``retry`` policy's tries and the first
    chunk together; ``chunk_timeout`` bounds every gap between two chunks after that.
    """

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    connect_timeout: float = 3.0
    first_token_timeout: float = 8.0
    chunk_timeout: float = 10.0
    retry: RetryPolicy = MODEL_RETRY


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
        self._send_stream_options = True
        self._send_tools = True
        self._thinking_opened = False
        """Cleared (once, logged) when the server refuses them; kept for the adapter's life."""
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",
            max_retries=0,  # ``settings.retry`` decides, within the first-token deadline
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
                return await self.settings.retry.call(self._model_ids)
        except (*_SDK_ERRORS, TimeoutError) as err:
            raise map_error(err) from err

    async def _model_ids(self) -> list[str]:
        """Ask for the server's models once."""
        page = await self._client.models.list()
        return [model.id async for model in page]

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
        ``[DONE]``) is cut: its tool calls are reported as cut, never as complete. A reply
        that loops is stopped here: reading ends, the server stops generating.
        """
        reader = RoundReader(tools, thinking_opened=self._thinking_opened)
        error: LLMError | None = None
        done = DoneWatch()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.settings.first_token_timeout) as budget:
                stream = await self.settings.retry.call(
                    lambda: self._open_accepted(messages, tools, response_format)
                )
                done.watch(stream.response)
                async with stream:
                    async for chunk in stream:
                        budget.reschedule(loop.time() + self.settings.chunk_timeout)
                        for item in reader.feed(raw_chunk(chunk)):
                            yield item
                        if reader.stopped is not None:
                            break
        except (*_SDK_ERRORS, TimeoutError) as err:
            error = map_error(err)
            LOGGER.warning("Model stream failed: %s", error)
        for item in reader.end(error, done=done.seen):
            yield item
        self._learn_template(reader.template_opens_thinking)

    def _learn_template(self, opens_thinking: bool | None) -> None:
        """Remember whether the server's chat template opens ``<think>`` by itself.

        A reply that closes a block it never opened had its thinking in the text (the
        first such reply shows it as text; later ones hold it as thinking until it closes).
        """
        if opens_thinking is None or opens_thinking == self._thinking_opened:
            return
        self._thinking_opened = opens_thinking
        if opens_thinking:
            LOGGER.info(
                "The chat template of %s opens <think> itself; its replies are read as "
                "thinking until </think>",
                self.settings.model,
            )

    async def _open_accepted(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        response_format: Mapping[str, object] | None,
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Open the stream; drop (for good) an optional part the server refuses, then retry.

        A server that refuses ``stream_options`` answers without usage; one that refuses
        ``tools`` answers without tools (calls the model writes as text still run).
        """
        while True:
            try:
                return await self._open(messages, tools, response_format)
            except openai.APIStatusError as err:
                option = rejected_option(err)
                if option == "stream_options" and self._send_stream_options:
                    self._send_stream_options = False
                    LOGGER.warning(
                        "The model server at %s refuses stream_options (HTTP %s); "
                        "asking without them, so token usage may be missing",
                        redact_url(self.settings.base_url),
                        err.status_code,
                    )
                elif option == "tools" and tools and self._send_tools:
                    self._send_tools = False
                    LOGGER.warning(
                        "The model server at %s refuses tools for %s (HTTP %s); the "
                        "companion answers without tools from now on",
                        redact_url(self.settings.base_url),
                        self.settings.model,
                        err.status_code,
                    )
                else:
                    raise

    async def _open(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        response_format: Mapping[str, object] | None = None,
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Send the request (once: the caller retries, before the first token)."""
        s = self.settings
        extra: dict[str, object] = {}
        if response_format is not None:
            extra["response_format"] = dict(response_format)
        if s.temperature is not None:
            extra["temperature"] = s.temperature
        if s.max_tokens is not None:
            extra["max_tokens"] = s.max_tokens
        if self._send_stream_options:
            extra["stream_options"] = {"include_usage": True}
        if tools and self._send_tools:
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
        wire = to_wire_without_tools(messages) if not self._send_tools else wire_messages(messages)
        return await self._client.chat.completions.create(  # type: ignore[call-overload,no-any-return]
            model=s.model,
            messages=list(wire),
            stream=True,
            timeout=self._timeout,
            **extra,
        )
