"""A TCP server on 127.0.0.1 at an ephemeral port for the life of an ``async with``.

Subclasses say how one connection is served (``_serve``); this part listens, closes every
connection at the end, and knows when no client is connected any more.
"""

from __future__ import annotations

import asyncio
from typing import Self


class LoopbackServer:
    """Listen on 127.0.0.1:<port>; serve each connection with ``_serve``; count them."""

    host: str = "127.0.0.1"
    port: int = 0

    async def __aenter__(self) -> Self:
        """Start listening on an ephemeral port."""
        self._open = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._server = await asyncio.start_server(self._handle, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Stop listening and close every connection."""
        self._server.close()
        self._server.close_clients()
        await self._server.wait_closed()

    async def wait_idle(self) -> None:
        """Wait until no client connection is open."""
        await self._idle.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one connection until it ends (each subclass says how)."""
        raise NotImplementedError

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one connection; a client that goes away ends it quietly."""
        self._open += 1
        self._idle.clear()
        try:
            await self._serve(reader, writer)
        except ConnectionError:
            pass
        finally:
            writer.transport.abort()
            self._open -= 1
            if self._open == 0:
                self._idle.set()
