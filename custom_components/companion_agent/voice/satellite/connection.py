"""``SatelliteConnection``: keep one Wyoming satellite connected, its events flowing both ways.

Connect, ``describe`` and ``run-satellite``, then read the satellite's events until it
closes or fails; then connect again after a backoff (``RECONNECT_FIRST`` seconds, doubling
up to ``RECONNECT_MAX``; back to the first after a connection that held for
``RECONNECT_MAX``). A ``ping`` is sent once at connect: only a satellite that answers it
is pinged again (every ``PING_INTERVAL`` s) and taken as gone when it stays silent for
``PING_TIMEOUT`` s; wyoming-satellite 1.0.0 never answers, and is not asked to.
The listener hears, on the event loop: connected, each input (typed, checked), and
disconnected. Writes go out one event at a time, in order, each within the link's
write timeout; a write that fails drops the connection (and the loop reconnects).
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Protocol

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.satellite import RunSatellite

from ...const import LOGGER
from ...engine.errors import SatelliteError, SpeechError
from ...engine.speech.satellite import (
    Ignored,
    PingAsked,
    PongHeard,
    SatelliteEvents,
    SatelliteInput,
    SatelliteLink,
)

RECONNECT_FIRST = 1.0
RECONNECT_MAX = 60.0
PING_INTERVAL = 5.0
PING_TIMEOUT = 15.0


class SatelliteListener(Protocol):
    """What the satellite's entity hears from its connection."""

    def satellite_connected(self) -> None:
        """The satellite is connected and was asked to run."""

    def satellite_input(self, item: SatelliteInput) -> None:
        """The satellite said ``item``."""

    def satellite_disconnected(self, reason: str) -> None:
        """The connection is gone; it will be tried again."""


class SatelliteConnection:
    """One satellite, connected for as long as its entity lives."""

    def __init__(self, host: str, port: int, listener: SatelliteListener) -> None:
        """Remember where the satellite is and who listens; connect nothing yet."""
        self.host = host
        self.port = port
        self._listener = listener
        self._link: SatelliteLink | None = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._last_heard = 0.0
        self.answers_ping = False
        self.served = False
        """Whether the last attempt connected (a lost connection is warned about each time)."""

    @property
    def connected(self) -> bool:
        """Say whether the satellite is connected now."""
        return self._link is not None

    def start(self, hass: HomeAssistant, entry: ConfigEntry) -> None:
        """Keep the satellite connected in a background task of the entry."""
        self._task = entry.async_create_background_task(
            hass, self._run(), f"satellite {self.host}:{self.port}"
        )

    async def stop(self) -> None:
        """Disconnect and stop reconnecting."""
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def send(self, *events: Event) -> None:
        """Send ``events`` in order; raise SatelliteError if the satellite cannot take them."""
        async with self._lock:
            link = self._link
            if link is None:
                raise SatelliteError("not connected", host=self.host, port=self.port)
            try:
                await link.write(*events)
            except SatelliteError:
                link.close()  # the read loop sees it and reconnects
                raise

    def send_soon(self, hass: HomeAssistant, *events: Event) -> None:
        """Send ``events`` in a task of their own; a failure is only logged."""
        hass.async_create_background_task(self._send_logged(events), "satellite send")

    async def _send_logged(self, events: tuple[Event, ...]) -> None:
        """Send ``events``; log (not raise) a failure: the connection is retried anyway."""
        try:
            await self.send(*events)
        except SatelliteError as err:
            LOGGER.debug("Not sent to the satellite: %s", err)

    async def _run(self) -> None:
        """Connect, serve, and reconnect after a backoff, until stopped."""
        loop = asyncio.get_running_loop()
        delay = RECONNECT_FIRST
        failures = 0  # connection attempts failed in a row: the first is a warning
        while True:
            began = loop.time()
            reason = await self._serve_once()
            failures = 0 if self.served else failures + 1
            log = LOGGER.warning if failures <= 1 else LOGGER.debug
            log("Satellite %s; trying again", reason)
            if loop.time() - began >= RECONNECT_MAX:
                delay = RECONNECT_FIRST
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX)

    async def _serve_once(self) -> str:
        """Connect and read until the connection ends; return why it ended."""
        self.served = False
        try:
            link = await SatelliteLink.open(self.host, self.port)
        except SpeechError as err:
            return str(err)
        self.served = True
        self._link = link
        self.answers_ping = False
        self._last_heard = asyncio.get_running_loop().time()
        pinger: asyncio.Task[None] | None = None
        try:
            await self.send(Describe().event(), RunSatellite().event(), Ping().event())
            LOGGER.debug("Satellite %s:%s connected", self.host, self.port)
            self._listener.satellite_connected()
            pinger = asyncio.create_task(self._ping(link))
            await self._read(link)
        except SatelliteError as err:
            return str(err)
        finally:
            if pinger is not None:
                pinger.cancel()
            link.close()
            self._link = None
            self._listener.satellite_disconnected("the connection ended")
        return f"{self.host}:{self.port}: it closed the connection"

    async def _read(self, link: SatelliteLink) -> None:
        """Hand each event to the listener until the satellite closes; answer its pings."""
        events = SatelliteEvents()
        loop = asyncio.get_running_loop()
        while (event := await link.read()) is not None:
            self._last_heard = loop.time()
            item = events.read(event)
            match item:
                case PingAsked(text=text):
                    await self.send(Pong(text=text).event())
                case PongHeard():
                    self.answers_ping = True
                case Ignored(type=kind, reason=reason):
                    LOGGER.debug(
                        "Satellite %s:%s: %s ignored: %s", self.host, self.port, kind, reason
                    )
            self._listener.satellite_input(item)

    async def _ping(self, link: SatelliteLink) -> None:
        """Ping a satellite that answers pings; drop it when it falls silent."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(PING_INTERVAL)
            if not self.answers_ping:
                continue
            if loop.time() - self._last_heard > PING_TIMEOUT:
                LOGGER.debug("Satellite %s:%s stopped answering pings", self.host, self.port)
                link.close()
                return
            with suppress(SatelliteError):
                await self.send(Ping().event())
