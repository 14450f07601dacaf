"""A hostile Wyoming server in a process of its own: what it sends never ends, or is huge.

Run as ``python -m tests.support.hostile_wyoming MODE``; it prints its port, then serves
every connection in ``MODE`` until it is killed. It writes the protocol by hand (a JSON
line, then the declared bytes) and holds no more than one small buffer, so the memory a
test measures is the client's alone.

- ``endless-audio``: answers each ``synthesize`` with audio chunks, forever, flat out;
- ``huge-chunk``: answers with one audio chunk that declares 300 MiB, then sends zeros;
- ``endless-transcript``: answers the audio with transcript chunks, forever;
- ``huge-transcript``: answers with a transcript whose data declares 300 MiB.

``HostileServer`` starts and stops one from a test.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

type Mode = Literal["endless-audio", "huge-chunk", "endless-transcript", "huge-transcript"]

HUGE = 300 * 1024 * 1024
CHUNK = bytes(2048)  # 1024 samples of 22.05 kHz 16-bit mono: 46 ms
VOICE = "en_US-joe-medium"
INFO = {"tts": [{"name": "hostile", "voices": [{"name": VOICE, "languages": ["en_US"]}]}]}
ROOT = Path(__file__).resolve().parents[2]


def line(kind: str, data: Mapping[str, object] | None = None, **lengths: int) -> bytes:
    """Return an event's header line (its data inline) with any declared lengths."""
    header: dict[str, object] = {"type": kind, "data": dict(data or {}), **lengths}
    return json.dumps(header).encode() + b"\n"


async def serve(mode: Mode, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Serve one connection: wait for the request, then send what ``mode`` says."""
    audio = {"rate": 22050, "width": 2, "channels": 1}
    try:
        while request := await reader.readline():
            header = json.loads(request)
            kind = header.get("type")
            length = (header.get("data_length") or 0) + (header.get("payload_length") or 0)
            await reader.readexactly(length)
            if kind == "describe":
                writer.write(line("info", INFO))
            elif kind == "synthesize" and mode == "endless-audio":
                writer.write(line("audio-start", audio))
                chunk = line("audio-chunk", audio, payload_length=len(CHUNK)) + CHUNK
                while True:
                    writer.write(chunk)
                    await writer.drain()
            elif kind == "synthesize" and mode == "huge-chunk":
                writer.write(line("audio-chunk", audio, payload_length=HUGE))
                while True:
                    writer.write(bytes(65536))
                    await writer.drain()
            elif kind == "audio-stop" and mode == "endless-transcript":
                writer.write(line("transcript-start"))
                piece = line("transcript-chunk", {"text": "la "})
                while True:
                    writer.write(piece)
                    await writer.drain()
            elif kind == "audio-stop" and mode == "huge-transcript":
                writer.write(line("transcript", data_length=HUGE))
                while True:
                    writer.write(b" " * 65536)
                    await writer.drain()
            await writer.drain()
    except (ConnectionError, ValueError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.transport.abort()


async def main(mode: Mode) -> None:
    """Listen on 127.0.0.1 at a free port, print it, serve until killed."""
    server = await asyncio.start_server(
        lambda reader, writer: serve(mode, reader, writer), "127.0.0.1", 0
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


class HostileServer:
    """Run the hostile server in a process of its own for the life of a ``with``."""

    host = "127.0.0.1"

    def __init__(self, mode: Mode) -> None:
        """Prepare a server that behaves as ``mode`` says."""
        self.mode = mode
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        """Start it and learn its port."""
        command = [sys.executable, "-m", "tests.support.hostile_wyoming", self.mode]
        self._process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE)
        assert self._process.stdout is not None
        self.port = int(self._process.stdout.readline())
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop it."""
        assert self._process is not None
        self._process.kill()
        self._process.wait(5)

    @property
    def server(self) -> str:
        """Return ``host:port``, as the clients' logs name a server."""
        return f"{self.host}:{self.port}"


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))  # type: ignore[arg-type]
