"""The peers' server processes: a free loopback port, a log, waiting for an answer, a stop.

A child process finds the port: the test harness blocks sockets in this one until a test
asks for them.

The peers are host programs (venvs of the host's Python 3.13 in .peers/). In the Python
3.14 tier (script/py314) the tests run in a Debian sid tree that shares the host's network;
``PEER_ROOT`` then names the host's root, and a peer starts there, in the same folder, and
answers on the same loopback as ever.
"""

import asyncio
import os
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import pytest

FREE_PORT = (
    "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
)


def on_host(command: Sequence[str | Path]) -> list[str | Path]:
    """Return ``command`` run on the host: itself, or entering ``PEER_ROOT`` (in this folder)."""
    if not (root := os.environ.get("PEER_ROOT")):
        return list(command)
    return ["chroot", root, "/bin/sh", "-c", 'cd "$0" && exec "$@"', os.getcwd(), *command]


def free_port(python: str | Path) -> int:
    """Return a loopback port nothing listens on, found by ``python`` in a child process."""
    found = subprocess.run(
        on_host([python, "-c", FREE_PORT]), capture_output=True, text=True, check=True
    )
    return int(found.stdout)


def launch(command: Sequence[str | Path], log: Path) -> subprocess.Popen[bytes]:
    """Start ``command`` with its output in ``log``; do not wait for it."""
    with log.open("wb") as out:
        return subprocess.Popen(on_host(command), stdout=out, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server: terminate, then kill if it is still there after 5 s."""
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def wait_answering(
    process: subprocess.Popen[bytes],
    log: Path,
    name: str,
    answers: Callable[[], Awaitable[bool]],
    *,
    within: float,
    interval: float = 0.1,
) -> None:
    """Wait until ``answers()`` is true; fail the test if the server exits or takes too long.

    ``within`` is in seconds.
    """
    deadline = time.monotonic() + within
    while True:
        if process.poll() is not None:
            output = await asyncio.to_thread(log.read_text, errors="replace")
            pytest.fail(f"{name} exited:\n{output}")
        if await answers():
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{name} did not answer in {within} s")
        await asyncio.sleep(interval)
