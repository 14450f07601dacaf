"""The peers of ``benchmarks/satellite.py``: Piper, Whisper and wyoming-satellite, and Piper alone.

Each runs from ``.peers/`` (``script/peers``) on a free loopback port, with its log in the
benchmark's folder; the satellite wakes on its wake word program, as in the tests.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from custom_components.companion_agent.engine.errors import SpeechError
from custom_components.companion_agent.engine.speech import WyomingSTT, WyomingTTS
from custom_components.companion_agent.engine.speech.satellite.link import describe_satellite
from tests.support.peer_process import free_port, launch, stop
from tests.support.piper import PIPER, PiperPeer
from tests.support.satellite import PYTHON as SATELLITE_PYTHON
from tests.support.satellite import SatellitePeer, satellite_command
from tests.support.whisper import WHISPER, whisper_command

START_TIMEOUT = 60.0


class Peers:
    """The peers' processes, started in a folder of their own and stopped together."""

    def __init__(self, folder: Path) -> None:
        """Start Piper, Whisper and the satellite with their logs in ``folder``."""
        piper_python = PIPER / "venv" / "bin" / "python"
        for python in (piper_python, WHISPER / "venv" / "bin" / "python", SATELLITE_PYTHON):
            if not python.exists():
                raise SystemExit(f"satellite: {python} is missing: run script/peers")
        voice = (PIPER / "voice").read_text().strip()
        port = free_port(piper_python)
        command: list[str | Path] = [
            piper_python, "-m", "wyoming_piper", "--uri", f"tcp://127.0.0.1:{port}",
            "--voice", voice, "--data-dir", str(PIPER / "data"), "--local-files-only",
        ]  # fmt: skip
        self.piper = PiperPeer(
            launch(command, folder / "piper.log"), folder / "piper.log", port, voice
        )
        self.whisper_port = free_port(piper_python)
        self.whisper = launch(whisper_command(self.whisper_port), folder / "whisper.log")
        place = folder / "satellite"
        place.mkdir()
        port = free_port(SATELLITE_PYTHON)
        name = "Kitchen satellite"
        process = launch(satellite_command(place, port, name, wake=True), place / "satellite.log")
        self.satellite = SatellitePeer(process=process, folder=place, port=port, name=name)

    async def wait(self) -> None:
        """Wait until each peer answers ``describe``, or give up."""
        checks: dict[str, Callable[[], Awaitable[object]]] = {
            "wyoming-piper": WyomingTTS("127.0.0.1", self.piper.port).describe,
            "wyoming-faster-whisper": WyomingSTT("127.0.0.1", self.whisper_port).describe,
            "wyoming-satellite": lambda: describe_satellite("127.0.0.1", self.satellite.port),
        }
        for name, check in checks.items():
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                try:
                    await check()
                    break
                except SpeechError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"satellite: {name} did not start") from None
                    await asyncio.sleep(0.2)

    def stop(self) -> None:
        """Stop every peer."""
        for process in (self.satellite.process, self.whisper, self.piper.process):
            stop(process)


async def piper_alone(peers: Peers, text: str) -> float:
    """Return seconds from asking Piper for ``text`` alone to its first audio (median of 3)."""
    client = WyomingTTS("127.0.0.1", peers.piper.port, voice=peers.piper.voice, streaming=True)

    async def one() -> AsyncIterator[str]:
        """Yield the one sentence."""
        yield text

    times = []
    for _ in range(3):
        start = time.perf_counter()
        audio = client.synthesize(one())
        try:
            await anext(audio)
        finally:
            await audio.aclose()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
