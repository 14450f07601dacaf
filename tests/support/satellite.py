"""The real wyoming-satellite 1.0.0 from .peers/satellite, one per test, on an ephemeral port.

Its microphone is ``mic_program.py`` (silence at real time, and the audio a test cues);
its wake word is ``wake_program.py`` (a detection whenever the test asks); its speaker is
a file (``cat``, one process per utterance, as wyoming-satellite runs it). Without a wake
program it streams its microphone all the time (``always_streaming``).
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.errors import SpeechError
from custom_components.companion_agent.engine.speech.satellite.link import describe_satellite
from tests.support.peer_process import free_port, launch, stop, wait_answering

ROOT = Path(__file__).resolve().parents[2]
SATELLITE = ROOT / ".peers" / "satellite"
PYTHON = SATELLITE / "venv" / "bin" / "python"
FFMPEG = ROOT / ".peers" / "ffmpeg" / "bin" / "ffmpeg"
PROGRAMS = Path(__file__).resolve().parent
WAKE_WORD = "okay_nabu"
SPEAKER_RATE = 22050
START_TIMEOUT = 20.0
POLL = 0.05


@dataclass
class SatellitePeer:
    """A running wyoming-satellite: where it listens, and its microphone, wake word and speaker."""

    process: subprocess.Popen[bytes]
    folder: Path
    port: int
    name: str
    host: str = "127.0.0.1"

    @property
    def log(self) -> Path:
        """Return the satellite's own log."""
        return self.folder / "satellite.log"

    @property
    def speaker(self) -> Path:
        """Return the file the satellite's speaker writes (22.05 kHz, 16-bit mono)."""
        return self.folder / "speaker.raw"

    def wake(self) -> None:
        """Make the satellite hear its wake word now."""
        (self.folder / "wake").touch()

    def say(self, pcm: bytes) -> None:
        """Make the satellite's microphone hear ``pcm`` (16 kHz, 16-bit mono) next."""
        cue = self.folder / "cue"
        part = self.folder / "cue.part"
        part.write_bytes(pcm)
        part.rename(cue)

    def heard(self) -> bytes:
        """Return everything the satellite's speaker has played so far."""
        return self.speaker.read_bytes() if self.speaker.exists() else b""

    def heard_seconds(self) -> float:
        """Return how many seconds of audio the satellite's speaker has been sent so far."""
        return len(self.heard()) / (SPEAKER_RATE * 2)

    async def wait_heard(self, seconds: float, within: float = 30.0) -> float:
        """Wait until the speaker has been sent ``seconds`` of audio; return how much it has."""
        for _ in range(int(within / POLL)):
            if (sent := self.heard_seconds()) >= seconds:
                return sent
            await asyncio.sleep(POLL)
        pytest.fail(f"the satellite's speaker got less than {seconds} s in {within} s")


def satellite_command(folder: Path, port: int, name: str, *, wake: bool) -> list[str | Path]:
    """Return the command that runs wyoming-satellite with the test's programs."""
    command: list[str | Path] = [
        PYTHON,
        "-m",
        "wyoming_satellite",
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--name",
        name,
        "--area",
        "Kitchen",
        "--no-zeroconf",
        "--debug",
        "--mic-command",
        f"{PYTHON} {PROGRAMS / 'mic_program.py'} {folder / 'cue'}",
        "--snd-command",
        f"sh -c 'cat >> {folder / 'speaker.raw'}'",
        "--snd-command-rate",
        str(SPEAKER_RATE),
    ]
    if wake:
        command += [
            "--wake-command",
            f"{PYTHON} {PROGRAMS / 'wake_program.py'} {folder / 'wake'} {WAKE_WORD}",
        ]
    return command


async def start_satellite(folder: Path, *, wake: bool = True) -> AsyncIterator[SatellitePeer]:
    """Run wyoming-satellite in ``folder`` until the caller is done; wait until it answers."""
    if not await asyncio.to_thread(PYTHON.exists):
        pytest.fail(f"wyoming-satellite is not installed in {SATELLITE}: run script/peers")
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    port = free_port(PYTHON)
    name = "Kitchen satellite"
    process = launch(satellite_command(folder, port, name, wake=wake), folder / "satellite.log")
    peer = SatellitePeer(process=process, folder=folder, port=port, name=name)

    async def answers() -> bool:
        """Say whether the satellite describes itself yet."""
        try:
            await describe_satellite(peer.host, peer.port)
        except SpeechError:
            return False
        return True

    try:
        await wait_answering(process, peer.log, "wyoming-satellite", answers, within=START_TIMEOUT)
        yield peer
    finally:
        await asyncio.to_thread(stop, process)


@pytest.fixture
async def satellite(socket_enabled: None, tmp_path: Path) -> AsyncIterator[SatellitePeer]:
    """Run a wyoming-satellite that wakes on ``wake()`` (its own wake word program)."""
    async for peer in start_satellite(tmp_path / "satellite"):
        yield peer


@pytest.fixture
async def streaming_satellite(socket_enabled: None, tmp_path: Path) -> AsyncIterator[SatellitePeer]:
    """Run a wyoming-satellite with no wake word: it streams its microphone all the time."""
    async for peer in start_satellite(tmp_path / "satellite", wake=False):
        yield peer
