"""One TCP connection to a Wyoming server, shared by the TTS and STT clients.

Every write has a deadline, and reads have one when the client asks for it. A stall, a
dropped connection or a malformed event becomes the error the client chooses (``fail``), so
each client keeps its own failure type while the socket handling exists once.

Events are read here, not by the wyoming library, whose reader takes whatever lengths a
header declares: a server announcing a 300 MiB payload would have it read whole. Here a
header line holds at most ``MAX_LINE`` bytes, and its data and payload lengths are checked
against the client's limits before a byte of them is read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from wyoming.event import Event, async_write_event

from ..errors import SpeechConnectionError

type FailureFactory = Callable[[str], Exception]
MAX_LINE = 64 * 1024
"""An event's header line (asyncio's own default limit)."""
MAX_DATA = 256 * 1024
"""The JSON data an event may carry after its header (a 10,000-character transcript fits)."""
MAX_PAYLOAD = 1024 * 1024
"""One event's payload: about 24 s of 22.05 kHz audio (wyoming-piper sends 46 ms a chunk)."""


class MalformedEventError(ValueError):
    """A header line that is no Wyoming event."""


class OversizedEventError(ValueError):
    """An event declares more data or payload than the reader takes."""


async def read_event(
    reader: asyncio.StreamReader, *, max_data: int = MAX_DATA, max_payload: int = MAX_PAYLOAD
) -> Event | None:
    """Return the next Wyoming event, or None at the end of the stream.

    Raise ``OversizedEventError`` before reading a data or payload longer than allowed,
    ``MalformedEventError`` for a header that is no event (``ValueError`` if not JSON),
    ``IncompleteReadError`` when the stream ends inside one.
    """
    line = await reader.readline()  # ValueError past the reader's limit
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise asyncio.IncompleteReadError(line, None)
    header = json.loads(line)
    if not isinstance(header, dict) or not isinstance(kind := header.get("type"), str):
        raise MalformedEventError("not an event")
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise MalformedEventError("event data is not an object")
    data_length = _length(header, "data_length", max_data)
    payload_length = _length(header, "payload_length", max_payload)
    if data_length:
        extra = json.loads(await reader.readexactly(data_length))
        if not isinstance(extra, dict):
            raise MalformedEventError("event data is not an object")
        data.update(extra)
    payload = await reader.readexactly(payload_length) if payload_length else None
    return Event(type=kind, data=data, payload=payload)


def _length(header: dict[str, object], key: str, limit: int) -> int:
    """Return the length ``header[key]`` declares (0 if none), or raise if it is too long."""
    value = header.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedEventError(f"bad {key}: {value!r}")
    if value > limit:
        raise OversizedEventError(f"{key} {value} is over the limit of {limit} bytes")
    return value


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
        max_payload: int = MAX_PAYLOAD,
        oversized: FailureFactory | None = None,
    ) -> None:
        """Wrap an open stream pair; ``read_timeout`` None lets a read wait.

        ``oversized`` makes the error for an event over the limits (``fail`` by default).
        """
        self._reader = reader
        self._writer = writer
        self.fail = fail
        self._oversized = oversized or fail
        self._write_timeout = write_timeout
        self._read_timeout = read_timeout
        self._max_payload = max_payload

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
        timeout = self._read_timeout
        try:
            async with asyncio.timeout(timeout):
                return await read_event(self._reader, max_payload=self._max_payload)
        except TimeoutError as err:
            raise self.fail(f"no event within {timeout:.3g} s") from err
        except (ConnectionError, asyncio.IncompleteReadError) as err:
            raise self.fail(f"connection lost: {err!r}") from err
        except OversizedEventError as err:
            raise self._oversized(f"oversized event: {err}") from err
        except ValueError as err:  # not JSON, over the line limit, or JSON that is no event
            raise self.fail(f"malformed event: {err!r}") from err

    def close(self) -> None:
        """Close the socket at once, dropping anything unsent."""
        self._writer.transport.abort()


async def open_wyoming(
    host: str, port: int, *, within: float, what: str, line_limit: int = MAX_LINE
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
