"""The peers of ``benchmarks/voice.py``: wyoming-piper from ``.peers/piper``, and Piper alone.

``piper_alone`` is Piper's own time for a sentence (a request on a connection of its own,
to its first audio): the share of the physical limit no code of ours or HA's can remove.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

from custom_components.companion_agent.engine.errors import SpeechError
from custom_components.companion_agent.engine.speech import WyomingTTS
from tests.support.piper import PiperPeer
from tests.support.whisper import spoken

PIPER = Path(__file__).resolve().parents[1] / ".peers" / "piper"
TIMEOUT = 30.0


def launch_piper() -> tuple[subprocess.Popen[bytes], int, str]:
    """Start wyoming-piper from .peers/piper on a free port; return it, its port and voice."""
    python = PIPER / "venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"voice: wyoming-piper is not installed in {PIPER}: run script/peers")
    voice = (PIPER / "voice").read_text().strip()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    process = subprocess.Popen(
        [python, "-m", "wyoming_piper", "--uri", f"tcp://127.0.0.1:{port}", "--voice", voice,
         "--data-dir", str(PIPER / "data"), "--local-files-only"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return process, port, voice


async def wait_for_piper(process: subprocess.Popen[bytes], port: int, voice: str) -> None:
    """Wait until Piper answers, or give up."""
    client = WyomingTTS("127.0.0.1", port, voice=voice)
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            await client.describe()
        except SpeechError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("voice: wyoming-piper did not start") from None
            await asyncio.sleep(0.1)
        else:
            return


async def piper_alone(port: int, voice: str, text: str) -> float:
    """Return seconds from asking Piper for ``text`` alone to its first audio (median of 3)."""
    client = WyomingTTS("127.0.0.1", port, voice=voice)

    async def one() -> AsyncIterator[str]:
        """Yield the sentence."""
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


async def said(process: subprocess.Popen[bytes], port: int, voice: str, text: str) -> bytes:
    """Return ``text`` spoken by Piper as a microphone hears it (16 kHz, with silence)."""
    peer = PiperPeer(process=process, log=Path("/dev/null"), port=port, voice=voice)
    return await spoken(peer, text)
