"""A loopback port that a model server can go away from and come back to.

While up, every connection is relayed byte for byte to a live server; while down, new
connections are cut at once and open ones are cut too, as when the server's machine goes
away. The port never changes, so an entry pointed at it sees one server go down and return.
"""

from __future__ import annotations

import asyncio
from typing import Self
from urllib.parse import urlsplit

CHUNK = 65536


class SwitchablePort:
    """Relay 127.0.0.1:<port> to a server while up; cut every connection while down."""

    def __init__(self) -> None:
        """Start down, not yet listening."""
        self._listener: asyncio.Server | None = None
        self._target: tuple[str, int] | None = None
        self._open: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        """Return the base URL to give the OpenAI client, ending in `/v1`."""
        if self._listener is None:
            raise RuntimeError("SwitchablePort is not started")
        port = self._listener.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def up(self, server_url: str) -> None:
        """Relay new connections to the server at ``server_url``."""
        parts = urlsplit(server_url)
        assert parts.hostname is not None
        assert parts.port is not None
        self._target = (parts.hostname, parts.port)

    def down(self) -> None:
        """Cut every open connection and every new one."""
        self._target = None
        for writer in list(self._open):
            writer.transport.abort()

    async def __aenter__(self) -> Self:
        """Listen on an ephemeral loopback port."""
        self._listener = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Cut everything and stop listening."""
        self.down()
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Pipe one connection both ways until either side closes (or cut it when down)."""
        if self._target is None:
            writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        pair = {writer, upstream_writer}
        self._open |= pair
        try:
            pipes = {
                asyncio.ensure_future(_pipe(reader, upstream_writer)),
                asyncio.ensure_future(_pipe(upstream_reader, writer)),
            }
            _done, pending = await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            self._open -= pair
            for end in pair:
                end.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy bytes from ``reader`` to ``writer`` until the reader ends or a side breaks."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        return
