"""The real wyoming-faster-whisper from .peers/whisper, started once per session.

It loads the Whisper base model before it answers, which takes a few seconds, and each
transcription takes about as long as the speech: tests that transcribe are few on purpose.
Import the fixtures into a conftest or a test module to use them there.
"""

import re
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from wyoming.audio import AudioChunk as WyomingAudio
from wyoming.audio import AudioChunkConverter

from custom_components.companion_agent.engine.errors import SpeechError
from custom_components.companion_agent.engine.speech import WyomingSTT, WyomingTTS
from tests.support.peer_process import free_port, launch, stop, wait_answering
from tests.support.piper import PiperPeer

ROOT = Path(__file__).resolve().parents[2]
WHISPER = ROOT / ".peers" / "whisper"
START_TIMEOUT = 60.0
RATE = 16000
# Whisper misses a first word that starts with the audio: a mic has some silence before it.
LEAD_SILENCE = 0.5
TAIL_SILENCE = 1.0


@dataclass
class WhisperPeer:
    """A running wyoming-faster-whisper: where it listens, and whether it answered yet."""

    process: subprocess.Popen[bytes]
    log: Path
    port: int
    model: str
    host: str = "127.0.0.1"
    ready: bool = False


def whisper_command(port: int) -> list[str]:
    """Return the command that runs the peer on 127.0.0.1:``port``: base model, int8, beam 1."""
    return [
        str(WHISPER / "venv" / "bin" / "python"),
        "-m",
        "wyoming_faster_whisper",
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--model",
        str(WHISPER / "model"),
        "--data-dir",
        str(WHISPER / "data"),
        "--stt-library",
        "faster-whisper",
        "--compute-type",
        "int8",
        "--beam-size",
        "1",
        "--cpu-threads",
        "2",
        "--language",
        "en",
        "--local-files-only",
    ]


@pytest.fixture(scope="session")
def whisper_process() -> Iterator[WhisperPeer]:
    """Start wyoming-faster-whisper from .peers/whisper; stop it when the session ends."""
    python = WHISPER / "venv" / "bin" / "python"
    model = WHISPER / "model"
    if not python.exists() or not (model / "model.bin").exists():
        pytest.fail(f"wyoming-faster-whisper is not installed in {WHISPER}: run script/peers")
    port = free_port(python)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "whisper.log"
        process = launch(whisper_command(port), log)
        try:
            yield WhisperPeer(process=process, log=log, port=port, model=str(model))
        finally:
            stop(process)


@pytest.fixture
async def whisper(socket_enabled: None, whisper_process: WhisperPeer) -> WhisperPeer:
    """Return the session's whisper once it answers describe (its model is loaded by then)."""
    peer = whisper_process
    if peer.ready:
        return peer
    stt = WyomingSTT(peer.host, peer.port)

    async def answers() -> bool:
        """Say whether whisper describes itself yet (its model is loaded then)."""
        try:
            await stt.describe()
        except SpeechError:  # refused, or (still loading) closed before its info
            return False
        return True

    await wait_answering(
        peer.process,
        peer.log,
        "wyoming-faster-whisper",
        answers,
        within=START_TIMEOUT,
        interval=0.2,
    )
    peer.ready = True
    return peer


async def spoken(piper: PiperPeer, text: str) -> bytes:
    """Return ``text`` spoken by piper as 16 kHz 16-bit mono PCM, with silence around it."""
    converter = AudioChunkConverter(rate=RATE, width=2, channels=1)

    async def sentence() -> AsyncIterator[str]:
        """Yield the one sentence."""
        yield text

    pcm = b"".join(
        [
            converter.convert(
                WyomingAudio(
                    rate=chunk.rate, width=chunk.width, channels=chunk.channels, audio=chunk.audio
                )
            ).audio
            async for chunk in WyomingTTS(piper.host, piper.port).synthesize(sentence())
        ]
    )
    assert pcm, f"piper said nothing for {text!r}"
    return bytes(int(RATE * 2 * LEAD_SILENCE)) + pcm + bytes(int(RATE * 2 * TAIL_SILENCE))


async def pieces(pcm: bytes, size: int = 1024) -> AsyncIterator[bytes]:
    """Yield ``pcm`` in pieces of ``size`` bytes, as a microphone stream would."""
    for start in range(0, len(pcm), size):
        yield pcm[start : start + size]


def words(text: str) -> list[str]:
    """Return the words of ``text``: lowercase, punctuation stripped."""
    return re.sub(r"[^\w\s']", " ", text.lower()).split()


def heard_as(heard: str, said: str) -> bool:
    """Return whether Whisper heard ``said`` in ``heard``, a misheard word allowed.

    Piper's voices vary from one synthesis to the next, and now and then Whisper hears two
    words as one ("light is" as "lighters"): the words must match at 80 % or more.
    """
    return SequenceMatcher(None, words(heard), words(said)).ratio() >= 0.8
