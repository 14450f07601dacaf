"""One adapter over ``openai.AsyncOpenAI`` for any OpenAI-compatible server.

Vendor quirks are normalised in this package and nowhere else: the request (a server that
refuses ``stream_options`` or ``tools`` is asked again without them, and remembered), the
chunks (``chunks.py`` reads every vendor's shape from the raw JSON), the round
(``round.py``: thinking, calls written as text, loops, the end). A request is retried
(``MODEL_RETRY``) only while it is being opened, before the first token, inside the
first-token deadline; the SDK's own retries are off. Works on the ``openai`` SDK's 2.x
(httpx) and 3.x (httpx2) alike: see ``sdk_http``.

``ObservedModel`` is the one wrapper around a model: it tells the host how each round on its
own server ended (so the host follows that server's health from real turns) and, when a turn
or a task is traced, each call's tokens and timings. ``ChatModels`` builds one adapter per
role's settings and keeps it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Unpack

import openai
from openai.types.chat import ChatCompletionChunk

from .. import sdk_http
from ..errors import LLMBusyError, LLMError
from ..messages import ChatMessage
from ..redaction import redact_url
from ..retry import RetryPolicy
from ..tools.contract import ToolSpec
from .done import DoneWatch
from .round import RoundReader, TemplateThinking
from .stream import ChatModel, LLMItem, RoundEnd, RoundOptions, ServerWaiting
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

DEFAULT_BUSY_TIMEOUT = 60.0
"""How long a busy server may take to its first token: a local model's cold load."""
BUSY_STATUSES = frozenset({429, 503})
"""Answers that mean "there, but busy": too many requests, or overloaded / loading."""
BUSY_RETRY_DELAY = 1.0
WAITING_NOTICE_AFTER = 2.5
"""Seconds a server that has the request may stay silent before the round says it waits."""
WAITING_CHECK_EVERY = 0.25
CONNECTED_MARGIN = 0.25
"""Past the connect timeout, a request still in flight reached a server (it would have failed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMSettings:
    """Where the model lives and how long a voice turn may wait for it.

    ``first_token_timeout`` bounds connecting, the ``retry`` policy's tries and the first
    chunk together while the server has not answered; ``busy_timeout`` replaces it (counted
    from the start) once the server is known to be there but busy: it sent its response
    headers (the stream is open) and no chunk yet, it held the request past the connect
    timeout without failing it (a model loading), or it answered 429/503 (then it is asked
    again, about every ``BUSY_RETRY_DELAY`` seconds, until then). ``chunk_timeout`` bounds every
    gap between two chunks after the first.
    """

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    connect_timeout: float = 3.0
    first_token_timeout: float = 8.0
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
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
            read=max(settings.chunk_timeout, settings.busy_timeout),  # gaps: the budget
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
        busy = _BusyWatch(
            loop,
            until=loop.time() + max(self.settings.busy_timeout, 0.0),
            connect=self.settings.connect_timeout,
            model=self.settings.model,
        )
        try:
            async with asyncio.timeout(self.settings.first_token_timeout) as budget:
                busy.budget = budget
                opening = asyncio.ensure_future(
                    self._open_waiting(messages, tools, response_format, busy)
                )
                async with aclosing(busy.waiting(opening)) as notices:
                    async for notice in notices:
                        yield notice
                stream = opening.result()
                busy.accepted()
                done.watch(stream.response)
                async with stream:
                    chunks = aiter(stream)
                    first = asyncio.ensure_future(anext(chunks, None))
                    async with aclosing(busy.waiting(first)) as notices:
                        async for notice in notices:
                            yield notice
                    chunk = first.result()
                    while chunk is not None:
                        busy.first_chunk = True
                        budget.reschedule(loop.time() + self.settings.chunk_timeout)
                        for item in reader.feed(raw_chunk(chunk)):
                            yield item
                        if reader.stopped is not None:
                            break
                        chunk = await anext(chunks, None)
        except (*_SDK_ERRORS, TimeoutError) as err:
            error = busy.error(err)
            LOGGER.warning("Model stream failed: %s", error)
        for item in reader.end(error, done=done.seen):
            yield item
        self._learn_template(reader.template_thinking)

    async def _open_waiting(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        response_format: Mapping[str, object] | None,
        busy: _BusyWatch,
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """Open the stream with the retry policy; a busy answer (429/503) waits and asks again.

        A busy answer moves the deadline to the busy wait; without one, the first-token
        deadline ends the tries as before.
        """
        while True:
            try:
                return await self.settings.retry.call(
                    lambda: busy.sending(self._open_accepted(messages, tools, response_format))
                )
            except openai.APIStatusError as err:
                if err.status_code not in BUSY_STATUSES:
                    raise  # a busy answer was noted as it came (``_BusyWatch.sending``)
                await asyncio.sleep(BUSY_RETRY_DELAY)

    def _learn_template(self, shown: TemplateThinking) -> None:
        """Remember whether the server's chat template opens ``<think>`` by itself.

        A reply that closes a block it never opened had its thinking in the text (the
        first such reply shows it as text; later ones hold it as thinking until it closes).
        """
        opens_thinking = shown is TemplateThinking.OPENS
        if shown is TemplateThinking.UNSHOWN or opens_thinking == self._thinking_opened:
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


class _BusyWatch:
    """What one request showed of the server: there and busy, or not answering.

    The server is there once it sent its response headers (``accepted``), answered 429/503
    (``answered_busy``), or held a request longer than the connect timeout without failing
    it: a connection that was never made fails by then, so the request reached a server that
    is working on it (a local model loading sends no headers until its first token). Being
    there moves the deadline to ``until`` (the busy wait). ``waiting`` yields one
    ``ServerWaiting`` while the round waits: at once for 429/503, after
    ``WAITING_NOTICE_AFTER`` seconds of a server that is there and silent.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, *, until: float, connect: float, model: str
    ) -> None:
        """Start knowing nothing; ``until`` is the loop time a busy server may take."""
        self._loop = loop
        self._started = loop.time()
        self._connect = max(connect, 0.0)
        self._model = model
        self.until = until
        self.budget: asyncio.Timeout | None = None
        self.stream_open = False
        self.busy_status: int | None = None
        self.first_chunk = False
        self._in_flight_since: float | None = None
        self._took_request = False
        self._told = False

    async def sending[T](self, request: Awaitable[T]) -> T:
        """Await one try at the request, noting that it is in flight meanwhile."""
        self._in_flight_since = self._loop.time()
        try:
            return await request
        except openai.APIStatusError as err:
            if err.status_code in BUSY_STATUSES:
                self.answered_busy(err.status_code)  # known at once, whoever asks again
            raise
        finally:
            self._in_flight_since = None

    def accepted(self) -> None:
        """The server sent its headers: wait for its first chunk until the busy wait."""
        self.stream_open = True
        self._extend("accepted the request")

    def answered_busy(self, status: int) -> None:
        """The server answered 429/503: keep asking until the busy wait."""
        first = self.busy_status is None
        self.busy_status = status
        if first:
            self._extend(f"answered HTTP {status}")

    async def waiting(self, pending: asyncio.Future[Any]) -> AsyncGenerator[ServerWaiting]:
        """Wait for ``pending`` (cancelled if left); yield the round's notice when it is due."""
        try:
            while not pending.done():
                await asyncio.wait({pending}, timeout=WAITING_CHECK_EVERY)
                if not pending.done() and (notice := self._notice()) is not None:
                    yield notice
        finally:
            if not pending.done():
                pending.cancel()
                await asyncio.wait({pending})

    def _notice(self) -> ServerWaiting | None:
        """Note a request held past the connect timeout; return the notice if it is due now."""
        now = self._loop.time()
        if (
            not self._took_request
            and self._in_flight_since is not None
            and now - self._in_flight_since >= self._connect + CONNECTED_MARGIN
        ):
            self._took_request = True
            self._extend("took the request and is silent")
        if self._told or self.first_chunk:
            return None
        there = self.stream_open or self._took_request
        if self.busy_status is None and not (there and now - self._started >= WAITING_NOTICE_AFTER):
            return None
        self._told = True
        return ServerWaiting(status=self.busy_status)

    def _extend(self, what: str) -> None:
        """Move the deadline to the busy wait, if that is later."""
        when = None if self.budget is None else self.budget.when()
        if self.budget is not None and when is not None and when < self.until:
            self.budget.reschedule(self.until)
            LOGGER.info("The model server %s for %s; waiting for it as busy", what, self._model)

    def error(self, err: Exception) -> LLMError:
        """Return the engine's error for a failed request, saying busy where it was."""
        if isinstance(err, TimeoutError) and not self.first_chunk:
            if self.stream_open or self._took_request:
                return LLMBusyError(
                    "the model server accepted the request but sent no token in time"
                )
            if self.busy_status is not None:
                return LLMBusyError(
                    f"the model server stayed busy (HTTP {self.busy_status})",
                    status=self.busy_status,
                )
        if isinstance(err, openai.APIStatusError) and err.status_code in BUSY_STATUSES:
            return LLMBusyError(
                f"the model server stayed busy (HTTP {err.status_code})", status=err.status_code
            )
        return map_error(err)


type RoundObserver = Callable[[LLMError | None], None]
"""Told how each model round ended: the error, or None when the server answered."""
MAX_MODELS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """One model call as a trace shows it: its role and model, its tokens, how long it took.

    ``first_token_ms``: until the first text or thinking; None when none came (a round
    that only called tools, or failed).
    """

    role: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    first_token_ms: float | None
    total_ms: float
    error: str | None = None

    def as_trace(self) -> dict[str, object]:
        """Return the call as the trace's ``stats`` (token names as HA's integrations use)."""
        return {
            "role": self.role,
            "model": self.model,
            "input_tokens": self.prompt_tokens,
            "output_tokens": self.completion_tokens,
            "first_token_ms": self.first_token_ms,
            "total_ms": self.total_ms,
            **({"error": self.error} if self.error else {}),
        }


type CallListener = Callable[[ModelCall], None]


@dataclass(frozen=True, slots=True)
class CallTrace:
    """Where a traced model's calls are told: the listener, under a role and a model name."""

    role: str
    name: str
    listener: CallListener


class ObservedModel:
    """A chat model whose rounds are told to an observer, and its calls to a trace, if any."""

    def __init__(
        self,
        model: ChatModel,
        observer: RoundObserver | None = None,
        trace: CallTrace | None = None,
    ) -> None:
        """Wrap ``model``: ``observer`` hears how each round ended, ``trace`` what it cost."""
        self.model = model
        self._observer = observer
        self._trace = trace

    def traced(self, role: str, listener: CallListener | None, name: str = "") -> ObservedModel:
        """Return this model with each call told to ``listener`` under ``role`` (None: as is).

        ``name`` is the model's name in the trace; an adapter's own is used when it has one.
        """
        if listener is None:
            return self
        if isinstance(self.model, OpenAIChatModel):
            name = self.model.settings.model
        return ObservedModel(self.model, self._observer, CallTrace(role, name, listener))

    async def stream_with_tools(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        **options: Unpack[RoundOptions],
    ) -> AsyncGenerator[LLMItem]:
        """Stream the round unchanged; at its end tell the observer and the trace."""
        started = time.perf_counter()
        first: float | None = None
        if isinstance(self.model, OpenAIChatModel):
            stream = self.model.stream_with_tools(messages, tools, **options)
        elif options:
            raise TypeError(f"{type(self.model).__name__} takes no round options")
        else:
            stream = self.model.stream_with_tools(messages, tools)
        async for item in stream:
            if isinstance(item, RoundEnd):
                if self._observer is not None:
                    self._observer(item.error)
                if self._trace is not None:
                    self._trace.listener(_call(self._trace, item, started, first))
            elif first is None and not isinstance(item, ServerWaiting):
                first = time.perf_counter()
            yield item


def _call(trace: CallTrace, end: RoundEnd, started: float, first: float | None) -> ModelCall:
    """Return what one call cost: its tokens, its first token and its whole time in ms."""
    return ModelCall(
        role=trace.role,
        model=trace.name,
        prompt_tokens=end.usage.get("prompt_tokens"),
        completion_tokens=end.usage.get("completion_tokens"),
        first_token_ms=None if first is None else round((first - started) * 1000, 1),
        total_ms=round((time.perf_counter() - started) * 1000, 1),
        error=None if end.error is None else str(end.error),
    )


class ChatModels:
    """The models of every role's settings, on any server, built once each (bounded)."""

    def __init__(
        self,
        settings: LLMSettings,
        http: sdk_http.package.AsyncClient,
        observer: RoundObserver | None,
    ) -> None:
        """Build models with ``http``; tell ``observer`` each round on ``settings``' server."""
        self.settings = settings
        self._http = http
        self._observer = observer
        self._models: OrderedDict[LLMSettings, ObservedModel] = OrderedDict()

    def bound(self, settings: LLMSettings) -> ObservedModel:
        """Return the model for ``settings`` (built on first use, kept among the last 64)."""
        model = self._models.pop(settings, None)
        if model is None:
            ours = settings.base_url.rstrip("/") == self.settings.base_url.rstrip("/")
            adapter = OpenAIChatModel(settings, http_client=self._http)
            model = ObservedModel(adapter, self._observer if ours else None)
        self._models[settings] = model
        while len(self._models) > MAX_MODELS:
            self._models.popitem(last=False)
        return model
