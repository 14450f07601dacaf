"""How long speech to text takes once the person stops speaking, with the real peers.

Run: ``.venv/bin/python benchmarks/stt.py [--rounds N]`` (after ``script/peers``). Piper
speaks a few short commands once; each is sent through WyomingSTT to wyoming-faster-whisper
(base model, int8, beam 1, 2 threads) ``rounds`` times, as fast as it can be sent. The figure
is the time from the last audio sent (the end of speech) to the transcript, which is what a
person waits for after they stop speaking. It also prints how many commands came back word
for word.

Target: p95 ≤ 2000 ms for commands of about two seconds on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.figures import report_p95
from custom_components.companion_agent.engine.errors import SpeechConnectionError
from custom_components.companion_agent.engine.speech import WyomingSTT
from tests.support.peer_process import free_port
from tests.support.piper import PIPER, PiperPeer
from tests.support.whisper import (
    LEAD_SILENCE,
    RATE,
    TAIL_SILENCE,
    pieces,
    spoken,
    whisper_command,
    words,
)

TARGET_P95_MS = 2000.0
COMMANDS = (
    "Turn on the kitchen light.",
    "What is the weather like tomorrow?",
    "Turn off the bedroom lights.",
    "Lock the front door.",
)


async def wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    """Wait until the Wyoming server on ``port`` answers describe."""
    for _ in range(600):
        if process.poll() is not None:
            raise SystemExit(f"a peer exited with {process.returncode}: run script/peers")
        try:
            await WyomingSTT("127.0.0.1", port).describe()
        except SpeechConnectionError:
            await asyncio.sleep(0.1)
        else:
            return
    raise SystemExit("a peer did not answer in 60 s")


async def timed(audio: bytes, ended: list[float]) -> AsyncIterator[bytes]:
    """Yield ``audio`` in pieces; note when the last one was taken."""
    async for piece in pieces(audio, 640):
        yield piece
    ended.append(time.perf_counter())


async def measure(
    rounds: int, piper: PiperPeer, whisper: subprocess.Popen[bytes], whisper_port: int
) -> bool:
    """Transcribe every command ``rounds`` times once the peers answer; print the figure."""
    await wait_for(piper.port, piper.process)
    await wait_for(whisper_port, whisper)
    clips = [await spoken(piper, command) for command in COMMANDS]
    stt = WyomingSTT("127.0.0.1", whisper_port)
    samples: list[float] = []
    misheard: list[str] = []
    for _ in range(rounds):
        for command, clip in zip(COMMANDS, clips, strict=True):
            ended: list[float] = []
            result = await stt.transcribe(timed(clip, ended), language="en")
            samples.append((time.perf_counter() - ended[0]) * 1000)
            if words(result.text) != words(command):
                misheard.append(f"{command!r} heard as {result.text.strip()!r}")
    seconds = sum(len(clip) for clip in clips) / (RATE * 2) / len(clips)
    print(f"clips of {seconds:.1f} s on average ({LEAD_SILENCE + TAIL_SILENCE} s of it silence)")
    print(f"word for word: {len(samples) - len(misheard)} of {len(samples)}")
    for line in sorted(set(misheard)):
        print(f"  {line}")
    return report_p95("stt", samples, TARGET_P95_MS, unit="transcriptions")


def main(rounds: int) -> bool:
    """Start the peers, measure, and stop them."""
    piper_port, whisper_port = free_port(sys.executable), free_port(sys.executable)
    voice = (PIPER / "voice").read_text().strip()
    piper_process = subprocess.Popen(
        [
            str(PIPER / "venv" / "bin" / "python"),
            "-m",
            "wyoming_piper",
            "--uri",
            f"tcp://127.0.0.1:{piper_port}",
            "--voice",
            voice,
            "--data-dir",
            str(PIPER / "data"),
            "--local-files-only",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    whisper_process = subprocess.Popen(
        whisper_command(whisper_port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    piper = PiperPeer(process=piper_process, log=Path(), port=piper_port, voice=voice)
    try:
        return asyncio.run(measure(rounds, piper, whisper_process, whisper_port))
    finally:
        for process in (piper_process, whisper_process):
            process.terminate()
            process.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.exit(0 if main(args.rounds) else 1)
