"""The real wyoming-piper from .peers/piper, started once per session on an ephemeral port.

Import the fixtures into a conftest or a test module to use them there.
"""

import asyncio
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.errors import SpeechConnectionError
from custom_components.companion_agent.engine.speech import WyomingTTS
from tests.support.wyoming_proxy import WyomingProxy

ROOT = Path(__file__).resolve().parents[2]
PIPER = ROOT / ".peers" / "piper"
START_TIMEOUT = 30.0
FREE_PORT = (
    "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
)


@dataclass
class PiperPeer:
    """A running wyoming-piper: where it listens, its voice, and whether it answered yet."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int
    voice: str
    host: str = "127.0.0.1"
    ready: bool = False


@pytest.fixture(scope="session")
def piper_process() -> Iterator[PiperPeer]:
    """Start wyoming-piper from .peers/piper; stop it when the session ends."""
    python = PIPER / "venv" / "bin" / "python"
    voice_file = PIPER / "voice"
    if not python.exists() or not voice_file.exists():
        pytest.fail(f"wyoming-piper is not installed in {PIPER}: run script/peers")
    voice = voice_file.read_text().strip()
    found = subprocess.run([python, "-c", FREE_PORT], capture_output=True, text=True, check=True)
    port = int(found.stdout)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "piper.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    python,
                    "-m",
                    "wyoming_piper",
                    "--uri",
                    f"tcp://127.0.0.1:{port}",
                    "--voice",
                    voice,
                    "--data-dir",
                    str(PIPER / "data"),
                    "--local-files-only",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            yield PiperPeer(process=process, log=log, port=port, voice=voice)
        finally:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
async def piper(socket_enabled: None, piper_process: PiperPeer) -> PiperPeer:
    """Return the session's piper once it answers describe and has spoken once (warm)."""
    peer = piper_process
    if peer.ready:
        return peer
    tts = WyomingTTS(peer.host, peer.port)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if peer.process.poll() is not None:
            pytest.fail(f"wyoming-piper exited:\n{peer.log.read_text(errors='replace')}")
        try:
            await tts.describe()
            break
        except SpeechConnectionError:
            if time.monotonic() > deadline:
                pytest.fail(f"wyoming-piper did not answer in {START_TIMEOUT} s")
            await asyncio.sleep(0.1)

    async def warm_up() -> AsyncIterator[str]:
        yield "Ready."

    assert [chunk async for chunk in tts.synthesize(warm_up())], "piper's warm-up was silent"
    peer.ready = True
    return peer


@pytest.fixture
async def proxy(piper: PiperPeer) -> AsyncIterator[WyomingProxy]:
    """Run a fault-injecting Wyoming proxy in front of piper."""
    async with WyomingProxy(piper.host, piper.port) as running:
        yield running
