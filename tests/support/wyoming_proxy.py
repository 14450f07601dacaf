"""A real Wyoming TCP proxy on 127.0.0.1 that forwards to a server and drops or stalls on cue.

Traffic is forwarded event by event, as it comes: client-to-server so a fault can aim at one
sentence's text, server-to-client so the audio the server sent can be compared with what a
client made of it. ``sent`` keeps every event the client sent, as the server got it;
``journal`` (a list a test may share with its own notes) records each sentence's text as it
goes to the server.
"""

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Literal

from wyoming.event import Event, async_read_event, async_write_event

from tests.support.loopback_server import LoopbackServer

type FaultAction = Literal["drop", "stall"]

_TEXT_EVENTS = ("synthesize", "synthesize-chunk")
_VOICE_EVENTS = ("synthesize", "synthesize-start")


@dataclass
class _Fault:
    """Drop or stall the connection the next ``times`` times ``text`` is sent."""

    text: str
    action: FaultAction
    times: int


class WyomingProxy(LoopbackServer):
    """Forward connections on 127.0.0.1:<port> to ``host``:``port``; record what was sent."""

    def __init__(self, host: str, port: int) -> None:
        """Prepare a proxy to the server at ``host``:``port``."""
        self.target = (host, port)
        self.connections = 0
        self.sent: list[Event] = []
        self.texts: list[str] = []
        self.voices: list[str | None] = []  # the voice each synthesize(-start) asked for
        self.audio: list[bytes] = []
        self.finished = 0  # the sentences whose audio the server ended (``audio-stop``)
        self.journal: list[str] = []
        self.stalled = asyncio.Event()
        self._changed = asyncio.Event()
        self._faults: list[_Fault] = []

    @property
    def event_types(self) -> list[str]:
        """Return the types of the events the client sent, in order."""
        return [event.type for event in self.sent]

    def fault(self, text: str, action: FaultAction, *, times: int = 1) -> None:
        """Drop or stall the connection instead of forwarding ``text`` (the next ``times``)."""
        self._faults.append(_Fault(text=text, action=action, times=times))

    async def wait_asked(self, count: int) -> None:
        """Wait until ``count`` sentences have gone to the server."""
        while len(self.texts) < count:
            self._changed.clear()
            await self._changed.wait()

    async def wait_finished(self, count: int) -> None:
        """Wait until the server has ended the audio of ``count`` sentences."""
        while self.finished < count:
            self._changed.clear()
            await self._changed.wait()

    def _take_fault(self, text: str) -> FaultAction | None:
        """Return the action due for ``text`` and count it, or None."""
        for fault in self._faults:
            if fault.text == text and fault.times > 0:
                fault.times -= 1
                return fault.action
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one client connection until either side ends it or a fault does."""
        self.connections += 1
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        downstream = asyncio.create_task(_copy(upstream_reader, writer, self))
        try:
            while (event := await async_read_event(reader)) is not None:
                text = event.data.get("text") if event.type in _TEXT_EVENTS else None
                action = self._take_fault(text) if isinstance(text, str) else None
                if action == "drop":
                    break
                if action == "stall":
                    self.stalled.set()
                    with contextlib.suppress(ConnectionError):
                        await reader.read()  # until the client gives up
                    break
                self.sent.append(event)
                if event.type in _VOICE_EVENTS:
                    self.voices.append(_voice_name(event.data.get("voice")))
                if isinstance(text, str):
                    self.texts.append(text)
                    self.journal.append(f"piper asked: {text}")
                    self._changed.set()
                await async_write_event(event, upstream_writer)
        finally:
            downstream.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await downstream
            upstream_writer.transport.abort()


async def _copy(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proxy: WyomingProxy
) -> None:
    """Copy events from ``reader`` to ``writer`` until end of stream; keep the audio sent.

    A client that went away ends the copy: its transport is checked in the same step as the
    write (Python 3.13.0's ``writelines`` on a closed transport raises ``TypeError``).
    """
    with contextlib.suppress(ConnectionError):
        while (event := await async_read_event(reader)) is not None:
            if event.type == "audio-chunk" and event.payload:
                proxy.audio.append(event.payload)
            elif event.type == "audio-stop":
                proxy.finished += 1
                proxy._changed.set()
            if writer.is_closing():
                return
            await async_write_event(event, writer)


def _voice_name(voice: object) -> str | None:
    """Return the name in a synthesize event's ``voice`` field, or None."""
    name = voice.get("name") if isinstance(voice, dict) else None
    return name if isinstance(name, str) else None
