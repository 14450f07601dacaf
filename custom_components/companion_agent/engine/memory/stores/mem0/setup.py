"""Opening mem0 (blocking; run on the store's worker thread): import, Qdrant, the Memory.

mem0 reads two environment variables when it is first imported: ``MEM0_TELEMETRY`` (it
sends usage events to PostHog unless this is ``False``) and ``MEM0_DIR`` (it writes
``~/.mem0`` otherwise). Both are set here before the import. If mem0 was already imported
by someone else with telemetry on, opening fails rather than phone home.

Qdrant runs in-process on files under the store's folder, or as a server at a URL. A local
Qdrant folder admits one client per process; the store holds it, and a second store on the
same folder fails with ``in_use``. mem0's own embedder is replaced by ours (query and
passage sides, timeouts); its LLM is configured but never called: records are added with
``infer=False`` (extraction happens elsewhere).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from ....errors import MemoryBackendError, MemoryStoreError
from ...embeddings import Embedder, InputType

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

BACKEND = "mem0"
MEM0_REQUIREMENTS = ("mem0ai>=2.2.1,<3", "qdrant-client>=1.20.0,<2")  # ranges, as for neo4j

type Metadata = dict[str, object]
type Item = Mapping[str, object]


class VectorStore(Protocol):
    """The part of mem0's vector store the store calls: payload updates, no re-embedding."""

    def update(self, vector_id: str, vector: None, payload: Metadata) -> None:
        """Merge ``payload`` into the point's payload."""
        ...


class Mem0Memory(Protocol):
    """The part of mem0's ``Memory`` the store calls (its results are ``{"results": [...]}``)."""

    vector_store: VectorStore

    def add(
        self,
        messages: list[dict[str, str]],
        *,
        user_id: str,
        agent_id: str,
        metadata: Metadata,
        infer: bool,
    ) -> Item:
        """Add memories."""
        ...

    def get(self, memory_id: str) -> Item | None:
        """Return one memory."""
        ...

    def get_all(self, *, filters: Metadata, top_k: int, show_expired: bool) -> Item:
        """List memories."""
        ...

    def search(self, query: str, *, top_k: int, filters: Metadata) -> Item:
        """Search memories."""
        ...

    def delete(self, memory_id: str) -> object:
        """Delete a memory."""
        ...

    def close(self) -> None:
        """Close the history database."""
        ...


def results(answer: Item) -> list[Item]:
    """Return the items of a mem0 answer."""
    found = answer.get("results")
    return [item for item in found if isinstance(item, Mapping)] if isinstance(found, list) else []


@dataclass(frozen=True, slots=True, kw_only=True)
class Mem0Settings:
    """Where mem0 keeps its files, which Qdrant it uses, and its (unused) LLM."""

    folder: Path
    """mem0's own folder (MEM0_DIR), its history database and a local Qdrant's files."""
    qdrant_url: str | None = None
    """A Qdrant server (``http://host:6333``); None keeps Qdrant in files under ``folder``."""
    qdrant_api_key: str | None = field(default=None, repr=False)
    collection: str = "companion_agent"
    llm_base_url: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    llm_model: str = "gpt-4o-mini"
    timeout: float = 10.0
    """Seconds for each call (waiting for the worker thread included)."""


class EmbedderBridge:
    """mem0's embedder interface over ours, called on the worker thread.

    The store embeds a call's texts in one batch on the event loop first and primes the
    bridge with them; mem0's own per-text requests then find them here. Anything else is
    asked of the embedder through the event loop, waiting at most the timeout.
    """

    def __init__(self, embedder: Embedder, loop: asyncio.AbstractEventLoop, timeout: float):
        """Bridge to ``embedder``, whose calls run on ``loop``."""
        self._embedder = embedder
        self._loop = loop
        self._timeout = timeout
        self._primed: dict[tuple[InputType, str], list[float]] = {}

    def prime(self, side: InputType, texts: Sequence[str], vectors: list[list[float]]) -> None:
        """Hold ``vectors`` of ``texts`` for the next call only (on the worker thread)."""
        self._primed = dict(zip(((side, text) for text in texts), vectors, strict=True))

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        """Return one vector (a search embeds a query, anything else a passage)."""
        return self.embed_batch([text], memory_action)[0]

    def embed_batch(
        self, texts: Sequence[str], memory_action: str | None = "add"
    ) -> list[list[float]]:
        """Return one vector per text, waiting for the event loop at most the timeout."""
        side: InputType = "query" if memory_action == "search" else "passage"
        if all((side, text) in self._primed for text in texts):
            return [self._primed[side, text] for text in texts]
        future = asyncio.run_coroutine_threadsafe(self._embedder.embed(texts, side), self._loop)
        try:
            return list(future.result(self._timeout))
        except concurrent.futures.TimeoutError as err:
            future.cancel()
            raise MemoryBackendError(
                "the embedder did not answer in time", backend=BACKEND, problem="cannot_connect"
            ) from err


def import_mem0(folder: Path) -> Any:
    """Import mem0 with telemetry off and its folder set; return the ``mem0`` module."""
    if "mem0" not in sys.modules:
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(folder / "mem0")
        (folder / "mem0").mkdir(parents=True, exist_ok=True)
    try:
        mem0 = importlib.import_module("mem0")
        main = importlib.import_module("mem0.memory.main")
    except ImportError as err:
        raise MemoryBackendError(
            f"mem0 is not installed ({', '.join(MEM0_REQUIREMENTS)})",
            backend=BACKEND,
            problem="missing_dependency",
        ) from err
    if main.MEM0_TELEMETRY:
        raise MemoryBackendError(
            "mem0 was imported elsewhere with telemetry on; restart with MEM0_TELEMETRY=False",
            backend=BACKEND,
            problem="invalid_config",
        )
    return mem0


def check_qdrant(settings: Mem0Settings) -> None:
    """Import mem0; reach a Qdrant server, or make the local folder (blocking)."""
    import_mem0(settings.folder)
    if settings.qdrant_url:
        client = qdrant_client(settings)
        try:
            client.get_collections()
        finally:
            client.close()
    else:
        (settings.folder / "qdrant").mkdir(parents=True, exist_ok=True)


def qdrant_client(settings: Mem0Settings) -> QdrantClient:
    """Return a Qdrant client for the settings (a local folder is locked by it)."""
    try:
        qdrant = importlib.import_module("qdrant_client")
    except ImportError as err:
        raise MemoryBackendError(
            "qdrant-client is not installed", backend=BACKEND, problem="missing_dependency"
        ) from err
    if settings.qdrant_url:
        client = qdrant.QdrantClient(
            url=settings.qdrant_url,
            api_key=settings.qdrant_api_key or None,
            timeout=max(1, round(settings.timeout)),
            check_compatibility=False,  # else a thread asks the server its version
        )
    else:
        path = settings.folder / "qdrant"
        path.mkdir(parents=True, exist_ok=True)
        client = qdrant.QdrantClient(path=str(path))
    return cast("QdrantClient", client)


def open_memory(
    settings: Mem0Settings, client: QdrantClient, dims: int, bridge: EmbedderBridge
) -> Mem0Memory:
    """Return a mem0 ``Memory`` on ``client``'s collection of ``dims``-sized vectors."""
    mem0 = import_mem0(settings.folder)
    names = {c.name for c in client.get_collections().collections}
    if settings.collection in names:
        vectors = client.get_collection(settings.collection).config.params.vectors
        size = getattr(vectors, "size", None)
        if size is not None and size != dims:
            raise MemoryBackendError(
                f"collection {settings.collection!r} holds {size}-sized vectors, the embedder "
                f"makes {dims}: use another collection or the embedder it was made with",
                backend=BACKEND,
                problem="invalid_config",
            )
    placeholder = "not-used"  # mem0 wants keys; its own embedder and LLM are never called
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": settings.collection,
                "embedding_model_dims": dims,
                "client": client,
                "path": str(settings.folder / "qdrant"),
            },
        },
        "embedder": {"provider": "openai", "config": {"api_key": placeholder}},
        "llm": {
            "provider": "openai",
            "config": {
                "model": settings.llm_model,
                "openai_base_url": settings.llm_base_url,
                "api_key": settings.llm_api_key or placeholder,
            },
        },
        "history_db_path": str(settings.folder / "history.db"),
    }
    memory = mem0.Memory.from_config(config)
    memory.embedding_model = bridge
    return cast(Mem0Memory, memory)


def backend_error(err: BaseException) -> MemoryStoreError:
    """Return the error a mem0 or Qdrant failure means (ours pass through)."""
    if isinstance(err, MemoryStoreError):
        return err
    name = type(err).__name__
    status = getattr(err, "status_code", None)
    problem: Literal["cannot_connect", "auth", "in_use", "failed"] = "failed"
    if status in (401, 403):
        problem = "auth"
    elif "already accessed by another instance" in str(err):
        problem = "in_use"
    elif isinstance(err, OSError | TimeoutError) or name in (
        "ResponseHandlingException",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
    ):
        problem = "cannot_connect"
    detail = {"auth": "Qdrant refused the API key", "in_use": "the Qdrant folder is in use",
              "cannot_connect": "Qdrant could not be reached in time",
              "failed": "mem0 failed"}[problem]  # fmt: skip
    return MemoryBackendError(f"{detail} ({name})", backend=BACKEND, problem=problem)
