"""The real wyoming-piper from .peers/piper, started once per session on an ephemeral port.

Import the fixtures into a conftest or a test module to use them there.
"""

import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.errors import SpeechConnectionError
from custom_components.companion_agent.engine.speech import WyomingTTS
from tests.support.peer_process import free_port, launch, stop, wait_answering
from tests.support.wyoming_proxy import WyomingProxy

ROOT = Path(__file__).resolve().parents[2]
PIPER = ROOT / ".peers" / "piper"
START_TIMEOUT = 30.0


@dataclass
class PiperPeer:
    """A running wyoming-piper: where it listens, its voice, and whether it answered yet."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int
    voice: str
    host: str = "127.0.0.1"
    ready: bool = False


def piper_command(port: int, voice: str, *, steady: bool = False) -> list[str | Path]:
    """Return the command that runs the peer's ``voice`` on 127.0.0.1:``port``, offline.

    ``steady`` turns Piper's random noise off, so a text always sounds the same (the tests:
    two syntheses compared, Whisper hearing a sentence); the demo keeps the voice's own.
    """
    noise: list[str | Path] = ["--noise-scale", "0", "--noise-w-scale", "0"] if steady else []
    return [
        PIPER / "venv" / "bin" / "python",
        "-m",
        "wyoming_piper",
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--voice",
        voice,
        "--data-dir",
        str(PIPER / "data"),
        "--local-files-only",
        *noise,
    ]


@pytest.fixture(scope="session")
def piper_process() -> Iterator[PiperPeer]:
    """Start wyoming-piper from .peers/piper; stop it when the session ends."""
    python = PIPER / "venv" / "bin" / "python"
    voice_file = PIPER / "voice"
    if not python.exists() or not voice_file.exists():
        pytest.fail(f"wyoming-piper is not installed in {PIPER}: run script/peers")
    voice = voice_file.read_text().strip()
    port = free_port(python)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "piper.log"
        process = launch(piper_command(port, voice, steady=True), log)
        try:
            yield PiperPeer(process=process, log=log, port=port, voice=voice)
        finally:
            stop(process)


@pytest.fixture
async def piper(socket_enabled: None, piper_process: PiperPeer) -> PiperPeer:
    """Return the session's piper once it answers describe and has spoken once (warm)."""
    peer = piper_process
    if peer.ready:
        return peer
    tts = WyomingTTS(peer.host, peer.port)

    async def answers() -> bool:
        """Say whether piper describes itself yet."""
        try:
            await tts.describe()
        except SpeechConnectionError:
            return False
        return True

    await wait_answering(peer.process, peer.log, "wyoming-piper", answers, within=START_TIMEOUT)

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
