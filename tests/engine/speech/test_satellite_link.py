"""A satellite's connection (bounded reads over a real socket) and its speaker (paced audio)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from wyoming.event import Event
from wyoming.info import Attribution, Info, Satellite, TtsProgram

from custom_components.companion_agent.engine.errors import (
    NotASatelliteError,
    SatelliteError,
    SpeechConnectionError,
)
from custom_components.companion_agent.engine.speech.satellite import link as satellite_link
from custom_components.companion_agent.engine.speech.satellite.audio import PcmFormat
from custom_components.companion_agent.engine.speech.satellite.link import (
    MAX_PAYLOAD,
    SatelliteLink,
    describe_satellite,
)
from custom_components.companion_agent.engine.speech.satellite.speaker import SatelliteSpeaker

type Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
PIPER = PcmFormat(rate=22050, width=2, channels=1)


async def serving(serve: Serve) -> tuple[asyncio.Server, int]:
    """Listen on 127.0.0.1 with ``serve`` for each connection; return the server and port."""
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def sending(data: bytes) -> Serve:
    """Return a server that sends ``data`` and then closes."""

    async def serve(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()
        writer.close()

    return serve


async def read_all(data: bytes) -> list[Event]:
    """Return the events a link reads from a satellite that sends ``data``."""
    server, port = await serving(sending(data))
    link = await SatelliteLink.open("127.0.0.1", port)
    try:
        events = []
        while (event := await link.read()) is not None:
            events.append(event)
        return events
    finally:
        link.close()
        server.close()


async def test_an_event_with_data_and_payload_is_read(socket_enabled: None) -> None:
    """Header, data and payload: one event; the end of the stream: None."""
    data = json.dumps({"rate": 16000}).encode()
    header = {
        "type": "audio-chunk",
        "data": {"width": 2},
        "data_length": len(data),
        "payload_length": 4,
    }
    events = await read_all(json.dumps(header).encode() + b"\n" + data + b"\1\2\3\4")
    assert events == [Event("audio-chunk", {"width": 2, "rate": 16000}, payload=b"\1\2\3\4")]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (json.dumps({"type": "x", "payload_length": MAX_PAYLOAD + 1}).encode() + b"\n", "over"),
        (json.dumps({"type": "x", "data_length": 10**9}).encode() + b"\n", "over"),
        (json.dumps({"type": "x", "payload_length": -1}).encode() + b"\n", "bad payload"),
        (b'{"type": "x", "data_length": 5}\n[1,2]', "no object"),
        (b'{"type": "x", "payload_length": 10}\n\0\0', "inside an event"),
        (b"not json\n", "malformed"),
        (b'{"no": "type"}\n', "no type"),
        (b'{"type": "x"' + b" " * 20_000 + b"}\n", "malformed"),
    ],
)
async def test_what_is_no_event_or_over_its_bounds_fails_the_link(
    socket_enabled: None, data: bytes, why: str
) -> None:
    """Refused before anything is read past its bound, as the satellite's error."""
    with pytest.raises(SatelliteError, match=why):
        await read_all(data)


def answering(info: Info | None) -> Serve:
    """Return a server that answers describe with ``info`` (None: never answers)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        if info is not None:
            event = info.event()
            body = json.dumps(event.data).encode()
            writer.write(
                json.dumps({"type": "info", "data_length": len(body)}).encode() + b"\n" + body
            )
            await writer.drain()
        await asyncio.sleep(10)

    return serve


async def test_describe_tells_a_satellite_from_other_servers(
    socket_enabled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A satellite's info; a TTS server is no satellite; silence is no answer in time."""
    monkeypatch.setattr(satellite_link, "DESCRIBE_TIMEOUT", 0.3)
    satellite = Info(
        satellite=Satellite(
            name="Hall",
            attribution=Attribution(name="", url=""),
            installed=True,
            description=None,
            version=None,
        )
    )
    tts = Info(
        tts=[
            TtsProgram(
                name="piper",
                attribution=Attribution(name="", url=""),
                installed=True,
                description=None,
                version=None,
                voices=[],
            )
        ]
    )
    for info, expected in (
        (satellite, None),
        (tts, NotASatelliteError),
        (None, SpeechConnectionError),
    ):
        server, port = await serving(answering(info))
        try:
            if expected is None:
                assert (await describe_satellite("127.0.0.1", port)).name == "Hall"
            else:
                with pytest.raises(expected):
                    await describe_satellite("127.0.0.1", port)
        finally:
            server.close()


class Heard:
    """What a speaker sent, and when."""

    def __init__(self) -> None:
        """Nothing yet."""
        self.events: list[Event] = []
        self.times: list[float] = []

    async def send(self, event: Event) -> None:
        """Note one event."""
        self.events.append(event)
        self.times.append(time.monotonic())

    def audio_times(self) -> list[float]:
        """Return when each audio chunk was sent."""
        return [t for e, t in zip(self.events, self.times, strict=True) if e.type == "audio-chunk"]


async def pcm(seconds: float, fmt: PcmFormat = PIPER, size: int = 4410) -> AsyncIterator[bytes]:
    """Yield ``seconds`` of silence at once, in pieces: a source far faster than real time."""
    total = round(seconds * fmt.rate) * fmt.frame_bytes
    for start in range(0, total, size):
        yield bytes(min(size, total - start))


async def test_the_speaker_sends_at_real_time_at_most_its_lead_ahead() -> None:
    """First audio at once; then paced: a second of audio takes a second less the lead."""
    heard = Heard()
    speaker = SatelliteSpeaker(heard.send, lead=0.2)
    began = time.monotonic()
    await speaker.play(PIPER, pcm(1.0))
    times = heard.audio_times()
    assert heard.events[0].type == "audio-start"
    assert heard.events[-1].type == "audio-stop"
    assert times[0] - began < 0.05
    assert times[-1] - times[0] >= 1.0 - 0.2 - 0.06
    assert abs(speaker.sent_seconds - 1.0) < 1e-6
    assert speaker.complete
    assert speaker.first_audio_at is not None


async def test_a_stopped_speaker_ends_its_audio_and_knows_what_was_heard() -> None:
    """Cancelled mid-way: audio-stop at once; played is the seconds heard by then."""
    heard = Heard()
    speaker = SatelliteSpeaker(heard.send, lead=0.1)
    playing = asyncio.create_task(speaker.play(PIPER, pcm(3.0)))
    await asyncio.sleep(0.5)
    played = speaker.played_seconds()
    playing.cancel()
    await asyncio.wait((playing,))
    assert heard.events[-1].type == "audio-stop"
    assert 0.35 < played < 0.65
    assert speaker.sent_seconds < played + 0.2
    assert not speaker.complete


async def test_the_speaker_converts_to_the_format_the_satellite_wants() -> None:
    """Asked for 16 kHz: every chunk is 16 kHz, the length kept."""
    heard = Heard()
    wanted = PcmFormat(rate=16000, width=2, channels=1)
    speaker = SatelliteSpeaker(heard.send, target=wanted, lead=5.0)
    await speaker.play(PIPER, pcm(0.5))
    chunks = [e for e in heard.events if e.type == "audio-chunk"]
    assert {e.data["rate"] for e in chunks} == {16000}
    assert abs(sum(len(e.payload or b"") for e in chunks) - 16000) <= 16


async def test_played_is_waited_for_only_from_a_satellite_that_says_it() -> None:
    """``played`` set: at once; none expected: the audio's end plus the margin."""
    speaker = SatelliteSpeaker(Heard().send, lead=5.0)
    await speaker.play(PIPER, pcm(0.2))
    played = asyncio.Event()
    played.set()
    assert await speaker.wait_played(played) is True
    began = time.monotonic()
    assert await speaker.wait_played(None) is False
    assert time.monotonic() - began >= 0.5  # PLAYED_MARGIN, the audio having ended
