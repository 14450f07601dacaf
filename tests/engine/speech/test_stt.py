"""WyomingSTT against the real wyoming-faster-whisper (fed by the real piper) and a scripted server.

Whisper transcribes once here: the faults and the streaming transcript, which this
whisper cannot stream, use the scripted server over a real loopback socket.
"""

import asyncio
import re
import socket
from collections.abc import AsyncIterator

import pytest

from custom_components.companion_agent.engine.errors import (
    SpeechConnectionError,
    SpeechTranscribeError,
)
from custom_components.companion_agent.engine.speech import AsrModel, Transcription, WyomingSTT
from custom_components.companion_agent.engine.speech.info import AsrInfo, parse_asr_info
from tests.engine.speech import settled
from tests.support.asr_server import INFO, TEXT, Behaviour, ScriptedAsrServer
from tests.support.piper import PiperPeer
from tests.support.whisper import WhisperPeer, pieces, spoken, words

SECOND = 32000  # bytes of 16 kHz 16-bit mono audio


async def silence(seconds: float, size: int = 3200) -> AsyncIterator[bytes]:
    """Yield ``seconds`` of silence in pieces of ``size`` bytes."""
    for _ in range(int(seconds * SECOND) // size):
        yield bytes(size)


async def endless(size: int = 3200) -> AsyncIterator[bytes]:
    """Yield silence for as long as anyone takes it, a little at a time, like a microphone."""
    while True:
        yield bytes(size)
        await asyncio.sleep(0.01)


@pytest.fixture
async def scripted(
    socket_enabled: None, request: pytest.FixtureRequest
) -> AsyncIterator[ScriptedAsrServer]:
    """Run the scripted ASR server with the behaviour the test's parameter names."""
    behaviour: Behaviour = getattr(request, "param", "answer")
    async with ScriptedAsrServer(behaviour=behaviour) as server:
        yield server


async def test_whisper_describes_its_model(whisper: WhisperPeer) -> None:
    info = await WyomingSTT(whisper.host, whisper.port).describe()

    assert info.programs == ("faster-whisper",)
    assert [model.name for model in info.installed] == [whisper.model]
    assert {"en", "zh", "de"} <= set(info.installed[0].languages)
    assert info.supports_streaming is False


async def test_piper_speaking_is_transcribed_by_whisper(
    piper: PiperPeer, whisper: WhisperPeer
) -> None:
    audio = await spoken(piper, "Turn on the kitchen light.")
    stt = WyomingSTT(whisper.host, whisper.port, model=whisper.model)

    result = await stt.transcribe(pieces(audio, 1001), language="en")  # odd: frames split

    assert words(result.text) == ["turn", "on", "the", "kitchen", "light"]


@pytest.mark.parametrize("scripted", ["answer"], indirect=True)
async def test_the_request_names_model_language_and_format(scripted: ScriptedAsrServer) -> None:
    stt = WyomingSTT(scripted.host, scripted.port, model="tiny")

    result = await stt.transcribe(
        pieces(bytes(3 * 44100), 1001), rate=22050, width=2, channels=1, language="en"
    )

    assert result == Transcription(text=TEXT, language="en")
    assert scripted.types[:2] == ["transcribe", "audio-start"]
    assert scripted.types[-1] == "audio-stop"
    assert scripted.events[0].data == {"name": "tiny", "language": "en"}
    assert scripted.events[1].data | {"timestamp": None} == {
        "rate": 22050,
        "width": 2,
        "channels": 1,
        "timestamp": None,
    }
    chunks = [e for e in scripted.events if e.type == "audio-chunk"]
    assert all(len(e.payload or b"") % 2 == 0 for e in chunks)  # whole frames only
    assert sum(len(e.payload or b"") for e in chunks) == 3 * 44100  # nothing lost
    assert max(len(e.payload or b"") for e in chunks) <= 32000


@pytest.mark.parametrize("scripted", ["stream"], indirect=True)
async def test_a_fake_streaming_server_reports_partials_and_the_final_text(
    scripted: ScriptedAsrServer,
) -> None:
    partials: list[str] = []
    stt = WyomingSTT(scripted.host, scripted.port)

    result = await stt.transcribe(silence(0.5), on_partial=partials.append)

    assert result.text == TEXT
    assert partials == [
        "turn",
        "turn on",
        "turn on the",
        "turn on the kitchen",
        "turn on the kitchen light",
    ]


@pytest.mark.parametrize("scripted", ["stream_only"], indirect=True)
async def test_a_fake_streamed_transcript_with_no_final_event_is_kept(
    scripted: ScriptedAsrServer,
) -> None:
    partials: list[str] = []

    result = await WyomingSTT(scripted.host, scripted.port).transcribe(
        silence(0.5), on_partial=partials.append
    )

    assert result == Transcription(text=TEXT)
    assert partials[-1] == TEXT


@pytest.mark.parametrize("scripted", ["early"], indirect=True)
async def test_a_fake_endpointing_server_answering_early_stops_the_audio(
    scripted: ScriptedAsrServer,
) -> None:
    before = asyncio.all_tasks()
    stt = WyomingSTT(scripted.host, scripted.port)

    result = await asyncio.wait_for(stt.transcribe(endless()), 10)

    assert result.text == TEXT
    assert "audio-stop" not in scripted.types
    async with asyncio.timeout(5):
        await scripted.wait_idle()
    assert await settled(before) == set()


async def test_connection_refused_is_a_clear_error(socket_enabled: None) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stt = WyomingSTT("127.0.0.1", port)

    with pytest.raises(SpeechConnectionError) as raised:
        await stt.transcribe(silence(0.1))
    assert (raised.value.host, raised.value.port) == ("127.0.0.1", port)
    with pytest.raises(SpeechConnectionError):
        await stt.describe()


@pytest.mark.parametrize(
    ("scripted", "says"),
    [
        ("close", "closed by the server|connection lost|write failed"),
        ("stall", "no transcript within 0.5 s"),
        ("error", "ModelNotLoaded"),
    ],
    indirect=["scripted"],
)
async def test_a_misbehaving_server_raises_a_transcribe_error(
    scripted: ScriptedAsrServer, says: str
) -> None:
    before = asyncio.all_tasks()
    stt = WyomingSTT(scripted.host, scripted.port, transcript_timeout=0.5)

    with pytest.raises(SpeechTranscribeError) as raised:
        await stt.transcribe(silence(1.0))

    assert re.search(says, str(raised.value))
    assert (raised.value.host, raised.value.port) == (scripted.host, scripted.port)
    async with asyncio.timeout(5):
        await scripted.wait_idle()
    assert await settled(before) == set()


@pytest.mark.parametrize("scripted", ["stall"], indirect=True)
async def test_cancelling_closes_the_socket_at_once(scripted: ScriptedAsrServer) -> None:
    before = asyncio.all_tasks()
    stt = WyomingSTT(scripted.host, scripted.port, transcript_timeout=30.0)
    task = asyncio.create_task(stt.transcribe(silence(0.2)))
    await asyncio.wait_for(scripted.got_audio_stop.wait(), 5)

    task.cancel()
    async with asyncio.timeout(1.0):
        await scripted.wait_idle()

    assert task.cancelled()
    assert await settled(before) == set()


@pytest.mark.parametrize("scripted", ["answer"], indirect=True)
async def test_the_audio_sources_own_error_reaches_the_caller(
    scripted: ScriptedAsrServer,
) -> None:
    async def broken() -> AsyncIterator[bytes]:
        """Yield a little audio, then fail as an unplugged microphone would."""
        yield bytes(320)
        raise OSError("microphone unplugged")

    with pytest.raises(OSError, match="microphone unplugged"):
        await WyomingSTT(scripted.host, scripted.port).transcribe(broken())
    async with asyncio.timeout(5):
        await scripted.wait_idle()


async def test_a_bad_audio_format_is_refused_before_connecting() -> None:
    with pytest.raises(ValueError, match="bad audio format"):
        await WyomingSTT("127.0.0.1", 9).transcribe(silence(0.1), rate=0)


@pytest.mark.parametrize("scripted", ["answer"], indirect=True)
async def test_describe_reads_the_scripted_servers_info_tolerantly(
    scripted: ScriptedAsrServer,
) -> None:
    info = await WyomingSTT(scripted.host, scripted.port).describe()

    assert info == parse_asr_info(INFO)
    assert info.programs == ("scripted",)
    assert info.supports_streaming is True
    assert info.models == (
        AsrModel(name="tiny", program="scripted", languages=("en", "zh")),
        AsrModel(name="small", program="scripted", languages=("en", "de"), description="Small"),
        AsrModel(name="absent", program="scripted", languages=("de",), installed=False),
    )
    assert info.installed == info.models[:2]
    assert info.model("absent") is info.models[2]
    assert info.model("nope") is None


def test_no_asr_at_all_is_an_empty_description() -> None:
    assert parse_asr_info({}) == AsrInfo()
    assert parse_asr_info({"asr": "whisper", "tts": [{"name": "piper"}]}) == AsrInfo()
