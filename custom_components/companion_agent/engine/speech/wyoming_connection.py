"""One TCP connection to a Wyoming server, shared by the TTS and STT clients.

Every write has a deadline, and reads have one when the client asks for it. A stall, a
dropped connection or a malformed event becomes the error the client chooses (``fail``), so
each client keeps its own failure type while the socket handling exists once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from wyoming.event import Event, async_read_event, async_write_event

from ..errors import SpeechConnectionError

type FailureFactory = Callable[[str], Exception]
LINE_LIMIT = 2**16  # asyncio's own default


class WyomingConnection:
    """An open stream pair to a Wyoming server; its failures are the client's ``fail``."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        fail: FailureFactory,
        write_timeout: float,
        read_timeout: float | None = None,
    ) -> None:
        """Wrap an open stream pair; ``read_timeout`` None lets a read wait."""
        self._reader = reader
        self._writer = writer
        self.fail = fail
        self._write_timeout = write_timeout
        self._read_timeout = read_timeout

    async def write(self, *events: Event) -> None:
        """Send ``events`` in order, or raise if the server is gone or does not take them."""
        try:
            async with asyncio.timeout(self._write_timeout):
                for event in events:
                    await async_write_event(event, self._writer)
        except (TimeoutError, ConnectionError) as err:
            raise self.fail(f"write failed: {err!r}") from err

    async def read(self) -> Event | None:
        """Return the next event, or None once the server closed the connection."""
        try:
            async with asyncio.timeout(self._read_timeout):
                return await async_read_event(self._reader)
        except TimeoutError as err:
            raise self.fail(f"no event within {self._read_timeout} s") from err
        except (ConnectionError, asyncio.IncompleteReadError) as err:
            raise self.fail(f"connection lost: {err!r}") from err
        except (ValueError, KeyError, AttributeError, TypeError) as err:
            # Not JSON, over the stream's line limit, or JSON that is no event (no "type",
            # not an object): the wyoming library lets the last three through.
            raise self.fail(f"malformed event: {err!r}") from err

    def close(self) -> None:
        """Close the socket at once, dropping anything unsent."""
        self._writer.transport.abort()


async def open_wyoming(
    host: str, port: int, *, within: float, what: str, line_limit: int = LINE_LIMIT
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to the ``what`` server (``TTS``, ``STT``) at ``host:port`` in ``within`` s.

    A line the server sends may be ``line_limit`` bytes long at most.
    """
    try:
        async with asyncio.timeout(within):
            return await asyncio.open_connection(host, port, limit=line_limit)
    except (OSError, TimeoutError) as err:
        raise SpeechConnectionError(
            f"cannot reach the {what} server: {err}", host=host, port=port
        ) from err
