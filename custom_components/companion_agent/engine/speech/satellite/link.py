"""One TCP connection to a Wyoming satellite, with every read bounded and every write timed.

The wyoming library reads an event's data and payload of whatever length its header
claims; a satellite is hostile until checked, so this reader refuses a header line, data
or payload over its bound before reading it (``MAX_LINE``, ``MAX_DATA``, ``MAX_PAYLOAD``).
Anything that is no Wyoming event, a stall in a write, or a dropped connection is a
``SatelliteError``. TCP keep-alive is on (``KEEPALIVE``), so a satellite that vanished
without closing is noticed within a minute even when it never answers ``ping``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

from wyoming.event import Event, async_write_event
from wyoming.info import Describe

from ...errors import NotASatelliteError, SatelliteError, SpeechConnectionError
from ..info import SatelliteInfo, parse_satellite_info
from ..wyoming_connection import open_wyoming

MAX_LINE = 16 * 1024
MAX_DATA = 64 * 1024
MAX_PAYLOAD = 256 * 1024  # an audio chunk: wyoming-satellite sends 2 KiB
CONNECT_TIMEOUT = 5.0
WRITE_TIMEOUT = 5.0
DESCRIBE_TIMEOUT = 5.0
MAX_EVENTS_BEFORE_INFO = 100  # a satellite streaming audio still answers describe soon
KEEPALIVE = (("TCP_KEEPIDLE", 20), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))
"""A silent connection is probed after 20 s, and given up after three probes 10 s apart."""


class SatelliteLink:
    """An open connection to a satellite: bounded reads, timed writes, closed at once."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, host: str, port: int
    ) -> None:
        """Wrap an open stream pair to the satellite at ``host:port``."""
        self._reader = reader
        self._writer = writer
        self.host = host
        self.port = port

    @classmethod
    async def open(cls, host: str, port: int, *, within: float = CONNECT_TIMEOUT) -> SatelliteLink:
        """Connect to the satellite, or raise SpeechConnectionError."""
        reader, writer = await open_wyoming(
            host, port, within=within, what="satellite", line_limit=MAX_LINE
        )
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            for option, value in KEEPALIVE:  # Linux's names; elsewhere the system's timing
                if hasattr(socket, option):
                    sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
        return cls(reader, writer, host=host, port=port)

    async def read(self) -> Event | None:
        """Return the next event, None once the satellite closed; raise for what is no event."""
        try:
            line = await self._reader.readline()
            if not line:
                return None
            header = _header(line)
            data = header.get("data")
            data = dict(data) if isinstance(data, dict) else {}
            data_length = _length(header.get("data_length"), MAX_DATA, "data")
            if data_length:
                extra = json.loads(await self._reader.readexactly(data_length))
                if not isinstance(extra, dict):
                    raise self._fail("event data that is no object")
                data.update(extra)
            payload_length = _length(header.get("payload_length"), MAX_PAYLOAD, "payload")
            payload = await self._reader.readexactly(payload_length) if payload_length else None
        except _BadEventError as err:
            raise self._fail(str(err)) from err
        except (ValueError, UnicodeDecodeError) as err:  # no JSON, or a line over MAX_LINE
            raise self._fail(f"malformed event: {err}") from err
        except asyncio.IncompleteReadError as err:
            raise self._fail("connection closed inside an event") from err
        except ConnectionError as err:
            raise self._fail(f"connection lost: {err!r}") from err
        return Event(type=header["type"], data=data, payload=payload)

    async def write(self, *events: Event) -> None:
        """Send ``events`` in order, or raise SatelliteError if the satellite does not take them."""
        try:
            async with asyncio.timeout(WRITE_TIMEOUT):
                for event in events:
                    await async_write_event(event, self._writer)
        except (TimeoutError, ConnectionError, RuntimeError) as err:
            raise self._fail(f"write failed: {err!r}") from err

    def close(self) -> None:
        """Close the socket at once, dropping anything unsent."""
        self._writer.transport.abort()

    def _fail(self, message: str) -> SatelliteError:
        """Return the error for this satellite."""
        return SatelliteError(message, host=self.host, port=self.port)


async def describe_satellite(host: str, port: int) -> SatelliteInfo:
    """Ask the Wyoming server at ``host:port`` what it is; return it if it is a satellite.

    Raise SpeechConnectionError when it cannot be reached, NotASatelliteError when it
    answers as something else, SatelliteError when it does not answer properly in time.
    """
    link = await SatelliteLink.open(host, port)
    try:
        async with asyncio.timeout(DESCRIBE_TIMEOUT):
            await link.write(Describe().event())
            for _ in range(MAX_EVENTS_BEFORE_INFO):
                event = await link.read()
                if event is None:
                    break
                if event.type == "info":
                    info = parse_satellite_info(event.data)
                    if info is None:
                        raise NotASatelliteError("not a satellite", host=host, port=port)
                    return info
        raise SatelliteError("no info event", host=host, port=port)
    except TimeoutError as err:
        raise SpeechConnectionError("no info event in time", host=host, port=port) from err
    finally:
        link.close()


class _BadEventError(Exception):
    """The bytes are JSON but no Wyoming event, or an event over its bounds."""


def _header(line: bytes) -> dict[str, Any]:
    """Return an event's header line as an object with a string ``type``."""
    header = json.loads(line)
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise _BadEventError("an event with no type")
    return header


def _length(value: object, bound: int, what: str) -> int:
    """Return a data or payload length from a header, checked against ``bound``."""
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _BadEventError(f"a bad {what} length: {value!r}")
    if value > bound:
        raise _BadEventError(f"{what} of {value} bytes, over {bound}")
    return value
