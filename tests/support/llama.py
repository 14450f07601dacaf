"""llama.cpp's own server (xllamacpp, from .peers/llama) with SmolLM2-135M-Instruct.

It serves ``/v1/chat/completions`` with the model's own chat template (Jinja), one thread,
greedy sampling and a fixed seed, so a request gets the same reply every time. The model
loads in about a second; one server is shared by the session. A test that stops its server
(a stream cut mid-reply) starts one of its own with ``start_llama``. Import the fixtures into
a conftest or a test module to use them there.
"""

import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.peer_process import free_port, launch, stop, wait_answering

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / ".peers" / "llama"
PYTHON = LLAMA / "venv" / "bin" / "python"
SERVER = ROOT / "script" / "peers.d" / "llama_server.py"
MODEL_FILE = LLAMA / "model" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "SmolLM2-135M-Instruct"
"""The name the server answers to (its model alias)."""
START_TIMEOUT = 60.0


@dataclass
class LlamaPeer:
    """A running llama.cpp server: where it listens, and whether it answered yet."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int
    host: str = "127.0.0.1"
    model: str = MODEL
    ready: bool = False

    @property
    def url(self) -> str:
        """Return the OpenAI-compatible base URL."""
        return f"http://{self.host}:{self.port}/v1"


def llama_command(port: int, *, threads: int = 1) -> list[str | Path]:
    """Return the command that serves SmolLM2 on 127.0.0.1:``port``."""
    return [
        PYTHON,
        SERVER,
        "--model",
        MODEL_FILE,
        "--alias",
        MODEL,
        "--port",
        str(port),
        "--threads",
        str(threads),
    ]


def start_llama(log: Path) -> LlamaPeer:
    """Start the server on a free loopback port (not waiting for it to answer)."""
    if not PYTHON.exists() or not MODEL_FILE.exists():
        pytest.fail(f"xllamacpp and SmolLM2 are not installed in {LLAMA}: run script/peers")
    port = free_port(PYTHON)
    return LlamaPeer(process=launch(llama_command(port), log), log=log, port=port)


async def wait_ready(peer: LlamaPeer) -> None:
    """Wait until /health answers (the model is loaded then); fail when it exits or is slow."""
    async with httpx.AsyncClient(timeout=2.0) as client:

        async def answers() -> bool:
            """Say whether the server's /health answers yet."""
            try:
                return (await client.get(f"http://{peer.host}:{peer.port}/health")).is_success
            except httpx.TransportError:
                return False

        await wait_answering(
            peer.process, peer.log, "llama.cpp server", answers, within=START_TIMEOUT
        )
    peer.ready = True


@pytest.fixture(scope="session")
def llama_process() -> Iterator[LlamaPeer]:
    """Start the llama.cpp server from .peers/llama; stop it when the session ends."""
    with tempfile.TemporaryDirectory() as tmp:
        peer = start_llama(Path(tmp) / "llama.log")
        try:
            yield peer
        finally:
            stop(peer.process)


@pytest.fixture
async def llama(socket_enabled: None, llama_process: LlamaPeer) -> LlamaPeer:
    """Return the session's llama.cpp server once it answers."""
    if not llama_process.ready:
        await wait_ready(llama_process)
    return llama_process
