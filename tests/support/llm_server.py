"""A real OpenAI-compatible HTTP server on loopback, driven by scripted replies.

Tests and the demo point `openai.AsyncOpenAI(base_url=server.url)` at it. Each chat
completion request consumes the next scripted `Reply`; with none left, a small default
responder answers like a helpful model would. Requests that ask for a `response_format`
(the memory model's structured answers) have their own script and request list, so they
never take a reply scripted for a chat turn; unscripted, they get `{}`.
"""

import asyncio
import base64
import hashlib
import itertools
import json
import math
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Self

from aiohttp import web

from .llm_script import (
    Chunk,
    ReasoningChunk,
    RecordedChunk,
    Refusal,
    Reply,
    TextChunk,
    ToolCallChunk,
    default_reply,
)

__all__ = [
    "Chunk",
    "LLMServer",
    "ReasoningChunk",
    "RecordedChunk",
    "Refusal",
    "Reply",
    "Responder",
    "SilentServer",
    "TextChunk",
    "ToolCallChunk",
]

EMBEDDING_SIZE = 16
SHUTDOWN_TIMEOUT = 0.1
ERROR_KINDS = {
    400: ("invalid_request_error", "invalid_request", "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "forbidden", "You are not allowed to do this."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."),
}
SERVER_ERROR = ("server_error", "server_error", "The server had an error processing your request.")

type Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
type Responder = Callable[[dict[str, object], int], Reply]
"""Answers a request nobody scripted: the request's body and its number (from 1)."""


class LLMServer:
    """Serve `/v1/chat/completions`, `/v1/models` and `/v1/embeddings` on 127.0.0.1."""

    def __init__(
        self,
        api_key: str | None = None,
        models: tuple[str, ...] = ("test-model",),
        *,
        responder: Responder = default_reply,
        structured_responder: Responder | None = None,
    ) -> None:
        """Prepare a server that checks `api_key` (if given) and lists `models`.

        ``responder`` answers chat requests nobody scripted, ``structured_responder`` those
        with a ``response_format`` (unscripted and without one: ``{}``).
        """
        self.api_key = api_key
        self.models = models
        self._responder = responder
        self._structured_responder = structured_responder
        self.requests: list[dict[str, object]] = []
        self.on_chat: Callable[[], None] | None = None
        """Called as each chat request (not a structured one) arrives, before it is answered."""
        self.structured_requests: list[dict[str, object]] = []
        """Requests that ask for a ``response_format`` (memory extraction, summaries)."""
        self.embedding_requests: list[dict[str, object]] = []
        self.embeddings_down = False
        """While True, ``/v1/embeddings`` answers 503 (an embedding server that is away)."""
        self.embeddings_hold: asyncio.Event | None = None
        """When set to an event, ``/v1/embeddings`` answers only once it is set (a slow server)."""
        self.embeddings_stall = 0
        """How many of the next ``/v1/embeddings`` requests stall ``stall_seconds`` first."""
        self.stall_seconds = 5.0
        self.embeddings_refuse: str | None = None
        """A text ``/v1/embeddings`` refuses with 400 whenever a request holds it."""
        self.aborted = 0
        self._seen = asyncio.Condition()
        self.refusals: list[Refusal] = []
        """Fields this server refuses in every request (as Ollama refuses tools for a model)."""
        self.refused: list[str] = []
        """The field of each request answered with a refusal, in order."""
        self._script: deque[Reply] = deque()
        self._structured: deque[Reply] = deque()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._handlers: set[asyncio.Task[object]] = set()
        self._ids = itertools.count(1)

    @property
    def url(self) -> str:
        """Return the base URL to give the OpenAI client, ending in `/v1`."""
        if self._port is None:
            raise RuntimeError("LLMServer is not started")
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def pending(self) -> int:
        """Return how many scripted replies have not been consumed yet."""
        return len(self._script)

    async def asked(self, *, chat: int = 0, structured: int = 0, embeddings: int = 0) -> None:
        """Wait (at most 5 s) until the server has been asked at least that many times."""

        def enough() -> bool:
            """Say whether the requests so far reach the counts."""
            return (
                len(self.requests) >= chat
                and len(self.structured_requests) >= structured
                and len(self.embedding_requests) >= embeddings
            )

        async with asyncio.timeout(5), self._seen:
            await self._seen.wait_for(enough)

    async def _note(self) -> None:
        """Tell ``asked`` a request came."""
        async with self._seen:
            self._seen.notify_all()

    def script(self, *replies: Reply) -> None:
        """Queue replies; each chat completion request consumes the next one."""
        self._script.extend(replies)

    def refuse(self, *refusals: Refusal) -> None:
        """Refuse, from now on, every chat request that carries one of these fields."""
        self.refusals.extend(refusals)

    def script_structured(self, *replies: Reply) -> None:
        """Queue replies for requests with a ``response_format``; they never take chat ones."""
        self._structured.extend(replies)

    async def start(self) -> None:
        """Bind an ephemeral port on 127.0.0.1 and start serving."""
        if self._runner is not None:
            raise RuntimeError("LLMServer is already started")
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._guarded(self._chat))
        app.router.add_get("/v1/models", self._guarded(self._models))
        app.router.add_post("/v1/embeddings", self._guarded(self._embeddings))
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=SHUTDOWN_TIMEOUT
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])

    async def close(self) -> None:
        """Stop serving, cut open streams and release the port."""
        runner, self._runner = self._runner, None
        self._port = None
        for task in self._handlers:
            task.cancel()
        if runner is not None:
            await runner.cleanup()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)

    async def __aenter__(self) -> Self:
        """Start the server."""
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the server."""
        await self.close()

    def _guarded(self, handler: Handler) -> Handler:
        """Wrap a handler with the API key check and in-flight task tracking."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            expected = f"Bearer {self.api_key}"
            if self.api_key is not None and request.headers.get("Authorization") != expected:
                return _error_response(401)
            task = asyncio.current_task()
            if task is None:
                return await handler(request)
            self._handlers.add(task)
            try:
                return await handler(request)
            except asyncio.CancelledError:
                self.aborted += 1  # the client went away mid-answer
                raise
            finally:
                self._handlers.discard(task)

        return guarded

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        """Answer a chat completion with the next scripted reply."""
        body = await _json_body(request)
        if body is None:
            return _error_response(400, "The body must be a JSON object.")
        for refusal in self.refusals:
            if body.get(refusal.field):
                self.refused.append(refusal.field)
                return web.json_response(refusal.body, status=refusal.status)
        if "response_format" in body:
            self.structured_requests.append(body)
            reply = self._structured.popleft() if self._structured else self._unscripted(body)
        else:
            self.requests.append(body)
            if self.on_chat is not None:
                self.on_chat()
            reply = (
                self._script.popleft()
                if self._script
                else self._responder(body, len(self.requests))
            )
        await self._note()
        if reply.status != 200:
            return _error_response(reply.status)
        wire = _Completion(
            id=f"chatcmpl-{next(self._ids):06d}",
            model=str(body.get("model") or self.models[0]),
            created=int(time.time()),
        )
        usage = _usage(reply, body)
        if body.get("stream") is True:
            return await _stream(request, wire, reply, usage if _wants_usage(body) else None)
        await asyncio.sleep(sum(chunk.delay for chunk in reply.chunks))
        if reply.cut_after is not None:
            return _cut(request, web.Response())
        return web.json_response(wire.whole(reply, usage))

    def _unscripted(self, body: dict[str, object]) -> Reply:
        """Answer a structured request nobody scripted: the responder's answer, or ``{}``."""
        if self._structured_responder is None:
            return Reply.text("{}")
        return self._structured_responder(body, len(self.structured_requests))

    async def _models(self, request: web.Request) -> web.StreamResponse:
        """List the configured models."""
        data = [
            {"id": model, "object": "model", "created": 0, "owned_by": "llm-server"}
            for model in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        """Return deterministic unit vectors derived from each input's sha256."""
        if self.embeddings_down:
            return _error_response(503)
        if self.embeddings_stall > 0:
            self.embeddings_stall -= 1
            await asyncio.sleep(self.stall_seconds)
        body = await _json_body(request)
        if body is None or body.get("input") is None:
            return _error_response(400, "'input' is required.")
        self.embedding_requests.append(body)
        await self._note()
        if self.embeddings_hold is not None:
            await self.embeddings_hold.wait()
        raw = body["input"]
        texts = raw if isinstance(raw, list) and not _is_tokens(raw) else [raw]
        if self.embeddings_refuse is not None and self.embeddings_refuse in texts:
            return _error_response(400, "This input is refused.")
        dimensions = body.get("dimensions")
        size = dimensions if isinstance(dimensions, int) and dimensions > 0 else EMBEDDING_SIZE
        as_base64 = body.get("encoding_format") == "base64"
        data: list[dict[str, object]] = []
        for index, item in enumerate(texts):
            vector = embed(item if isinstance(item, str) else json.dumps(item), size)
            value = _pack_floats(vector) if as_base64 else vector
            data.append({"object": "embedding", "index": index, "embedding": value})
        tokens = sum(len(str(item).split()) for item in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model") or self.models[0]),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )


def embed(text: str, size: int = EMBEDDING_SIZE) -> list[float]:
    """Return a deterministic unit vector of `size` floats for `text`."""
    values: list[float] = []
    for block in itertools.count():
        digest = hashlib.sha256(f"{block}:{text}".encode()).digest()
        for at in range(0, len(digest), 2):
            values.append(int.from_bytes(digest[at : at + 2], "big") / 32767.5 - 1.0)
        if len(values) >= size:
            break
    values = values[:size]
    norm = math.sqrt(sum(value * value for value in values)) or 1.0
    return [value / norm for value in values]


@dataclass(frozen=True, slots=True)
class _Completion:
    """The identity shared by every chunk of one completion, and its wire shapes."""

    id: str
    model: str
    created: int

    def head(self, kind: str) -> dict[str, object]:
        """Return the fields every object of this completion starts with."""
        return {
            "id": self.id,
            "object": kind,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_llm_server",
        }

    def chunk(self, delta: dict[str, object], finish_reason: str | None) -> dict[str, object]:
        """Return one `chat.completion.chunk`."""
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**self.head("chat.completion.chunk"), "choices": [choice]}

    def usage_chunk(self, usage: dict[str, int]) -> dict[str, object]:
        """Return the trailing chunk that carries only usage."""
        return {**self.head("chat.completion.chunk"), "choices": [], "usage": usage}

    def whole(self, reply: Reply, usage: dict[str, int]) -> dict[str, object]:
        """Return one `chat.completion` aggregating every chunk of `reply`."""
        message: dict[str, object] = {"role": "assistant", "content": None, "refusal": None}
        text = "".join(c.text for c in reply.chunks if isinstance(c, TextChunk))
        reasoning = "".join(c.text for c in reply.chunks if isinstance(c, ReasoningChunk))
        calls: dict[int, dict[str, str]] = {}
        for c in reply.chunks:
            if isinstance(c, ToolCallChunk):
                call = calls.setdefault(c.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = c.id or call["id"]
                call["name"] = c.name or call["name"]
                call["arguments"] += c.arguments
        if text or not calls:
            message["content"] = text
        if reasoning:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
                for _, call in sorted(calls.items())
            ]
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": reply.finish_reason,
        }
        return {**self.head("chat.completion"), "choices": [choice], "usage": usage}


async def _stream(
    request: web.Request, wire: _Completion, reply: Reply, usage: dict[str, int] | None
) -> web.StreamResponse:
    """Send `reply` as server-sent events, cutting or finishing it as scripted."""
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    try:
        await response.prepare(request)
        await response.write(b"")  # the headers now: the request is taken, tokens may follow
        if reply.is_recorded:
            await _replay(request, response, reply, wants_usage=usage is not None)
            return response
        for sent, chunk in enumerate(reply.chunks):
            if reply.cut_after is not None and sent >= reply.cut_after:
                return _cut(request, response)
            if chunk.delay > 0:
                await asyncio.sleep(chunk.delay)
            if isinstance(chunk, TextChunk) and chunk.hold is not None:
                await chunk.hold.wait()  # the test holds the rest of the answer back
            delta = _delta(chunk)
            if sent == 0:
                delta = {"role": "assistant", **delta}
            await _send(response, wire.chunk(delta, None))
        if reply.cut_after is not None:
            return _cut(request, response)
        if not reply.chunks:
            await _send(response, wire.chunk({"role": "assistant", "content": ""}, None))
        if reply.finish_reason is not None:
            await _send(response, wire.chunk({}, reply.finish_reason))
        if usage is not None:
            await _send(response, wire.usage_chunk(usage))
        if reply.send_done:
            await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
    except ConnectionError:
        # The client went away mid-stream: nothing left to send to anyone.
        pass
    return response


async def _replay(
    request: web.Request, response: web.StreamResponse, reply: Reply, *, wants_usage: bool
) -> None:
    """Send a recorded stream verbatim; its usage chunk only if the request asked for it."""
    for sent, chunk in enumerate(reply.chunks):
        if reply.cut_after is not None and sent >= reply.cut_after:
            _cut(request, response)
            return
        assert isinstance(chunk, RecordedChunk)
        if chunk.is_usage and not wants_usage:
            continue
        if chunk.delay > 0:
            await asyncio.sleep(chunk.delay)
        await response.write(f"data: {chunk.data}\n\n".encode())
    if reply.cut_after is not None:
        _cut(request, response)
        return
    await response.write_eof()


def _cut(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """Close the connection abruptly: no terminating chunk, no `[DONE]`."""
    if request.transport is not None:
        request.transport.close()
    return response


async def _send(response: web.StreamResponse, payload: dict[str, object]) -> None:
    """Write one SSE `data:` event."""
    await response.write(f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode())


def _delta(chunk: Chunk) -> dict[str, object]:
    """Return the `delta` object that carries `chunk` on the wire."""
    match chunk:
        case TextChunk(text=text):
            return {"content": text}
        case ReasoningChunk(text=text, field=field):
            return {"content": None, field: text}
        case ToolCallChunk(index=index, arguments=arguments, id=call_id, name=name):
            call: dict[str, object] = {"index": index}
            function: dict[str, object] = {"arguments": arguments}
            if call_id is not None:
                call["id"] = call_id
                call["type"] = "function"
            if name is not None:
                function["name"] = name
            call["function"] = function
            return {"content": None, "tool_calls": [call]}
        case RecordedChunk():
            raise TypeError("a recorded chunk is sent verbatim, not as a delta")


def _wants_usage(body: dict[str, object]) -> bool:
    """Tell whether a streaming request asked for a trailing usage chunk."""
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _usage(reply: Reply, body: dict[str, object]) -> dict[str, int]:
    """Return the scripted usage, or an estimate from the request and reply sizes."""
    if reply.usage is not None:
        return reply.usage
    return _estimated_usage(body, len(reply.chunks))


def _estimated_usage(body: dict[str, object], completion_tokens: int) -> dict[str, int]:
    """Estimate usage as one token per whitespace-separated word of the messages."""
    prompt_tokens = len(json.dumps(body.get("messages", [])).split())
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _error_response(status: int, message: str | None = None) -> web.Response:
    """Return an OpenAI-style error body with HTTP `status`."""
    kind, code, default_message = ERROR_KINDS.get(status, SERVER_ERROR)
    error = {"message": message or default_message, "type": kind, "param": None, "code": code}
    return web.json_response({"error": error}, status=status)


async def _json_body(request: web.Request) -> dict[str, object] | None:
    """Return the request's JSON object body, or None if it is not one."""
    try:
        body = await request.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _is_tokens(value: list[object]) -> bool:
    """Tell whether an embeddings `input` list is one tokenised input (a list of ints)."""
    return bool(value) and all(isinstance(item, int) for item in value)


def _pack_floats(vector: list[float]) -> str:
    """Encode floats as base64 little-endian float32, as `encoding_format=base64` wants."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


class SilentServer:
    """A model server that takes the connection and the request, and never answers.

    No status line, no headers: what a local server loading its model looks like until the
    first token (it writes nothing before), or a wedged one. Another busy server sends its
    headers and is slow to the first token (an ``LLMServer`` reply whose first chunk has a
    ``delay``).
    """

    def __init__(self) -> None:
        """Prepare the server; ``start`` listens on a free loopback port."""
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self.connections = 0

    @property
    def url(self) -> str:
        """Return the base URL to give the OpenAI client, ending in `/v1`."""
        if self._server is None:
            raise RuntimeError("SilentServer is not started")
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def _take(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read whatever comes; answer nothing."""
        self.connections += 1
        self._writers.append(writer)
        while await reader.read(65536):
            pass

    async def __aenter__(self) -> Self:
        """Listen on 127.0.0.1."""
        self._server = await asyncio.start_server(self._take, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close every connection, then stop listening."""
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
