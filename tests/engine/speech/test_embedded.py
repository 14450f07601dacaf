"""Embedded Piper with the real piper-tts and the CC0 joe voice: order, cancel, bad files."""

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from piper import AudioChunk as PiperChunk
from piper import PiperVoice, SynthesisConfig

from custom_components.companion_agent.engine.errors import VoiceFileError
from custom_components.companion_agent.engine.speech import (
    AudioChunk,
    EmbeddedPiper,
    LoadedPiperVoice,
    PiperVoiceFolder,
    TtsVoice,
    VoiceFile,
    list_voice_files,
)
from tests.engine.speech import ONE_SENTENCE_AT_A_TIME, SENTENCES, recorded
from tests.support.piper_voice import JOE, JOE_DATA, install_voice

ROOT = Path(__file__).resolve().parents[3]
# one sentence, so one ONNX run of many seconds of speech: only terminating the run stops it
LONG = "And then " + ", and then ".join(f"the number {n} came along" for n in range(30)) + "."


class CountingPiper(PiperVoice):
    """The real piper voice; it notes texts, counts pieces and ONNX runs, flags a run start."""

    pieces: int = 0
    runs: int = 0
    started: threading.Event
    running: threading.Event
    texts: list[str]

    def phoneme_ids_to_audio(
        self,
        phoneme_ids: list[int],
        syn_config: SynthesisConfig | None = None,
        include_alignments: bool = False,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray | None]:
        """Flag that a run began, run the model, count the run once it is finished."""
        self.running.set()
        audio = super().phoneme_ids_to_audio(phoneme_ids, syn_config, include_alignments)
        self.runs += 1
        return audio

    def synthesize(
        self,
        text: str,
        syn_config: SynthesisConfig | None = None,
        include_alignments: bool = False,
    ) -> Iterable[PiperChunk]:
        """Yield piper's pieces for ``text``, counting each and flagging the first."""
        self.texts.append(text)
        for piece in super().synthesize(text, syn_config, include_alignments):
            self.pieces += 1
            self.started.set()
            yield piece


class RecordingVoice(LoadedPiperVoice):
    """A loaded voice that notes every text handed to it."""

    texts: list[str]

    async def speak(self, text: str, speaker: str | None = None) -> bytes:
        """Note ``text``, then speak it."""
        self.texts.append(text)
        return await super().speak(text, speaker)


@pytest.fixture(scope="module")
def joe() -> PiperVoice:
    """Load the joe voice once for the module."""
    return PiperVoice.load(JOE_DATA / f"{JOE}.onnx")


@pytest.fixture
def counting(joe: PiperVoice) -> CountingPiper:
    """Return the module's joe voice as a counting voice (same session, fresh counts)."""
    voice = CountingPiper(session=joe.session, config=joe.config)
    voice.started = threading.Event()
    voice.running = threading.Event()
    voice.texts = []
    return voice


@pytest.fixture
def voice(counting: CountingPiper) -> RecordingVoice:
    """Return a loaded, recording joe voice."""
    (file,) = list_voice_files(JOE_DATA)
    loaded = RecordingVoice(file, counting)
    loaded.texts = []
    return loaded


async def test_each_sentence_is_spoken_separately_and_in_order(voice: RecordingVoice) -> None:
    log: list[tuple[str, int]] = []
    chunks: list[AudioChunk] = []

    async for chunk in EmbeddedPiper(voice).synthesize(
        recorded((SENTENCES[0], "  ", *SENTENCES[1:]), log)
    ):
        log.append(("audio", chunk.sentence))
        chunks.append(chunk)

    # one chunk per sentence, each before the next is taken; the blank one is never spoken
    assert log == ONE_SENTENCE_AT_A_TIME
    assert voice.texts == list(SENTENCES)
    assert {(c.rate, c.width, c.channels) for c in chunks} == {(22050, 2, 1)}
    assert all(len(c.audio) > 22050 // 2 for c in chunks)  # a quarter second at least
    assert not voice.busy


async def test_a_cancel_mid_sentence_ends_the_run_and_hands_nothing_more(
    voice: RecordingVoice, counting: CountingPiper
) -> None:
    log: list[tuple[str, int]] = []
    audio = EmbeddedPiper(voice).synthesize(recorded((SENTENCES[0], LONG, SENTENCES[1]), log))
    first = await anext(audio)
    assert first.sentence == 0
    counting.running.clear()
    runs_before = counting.runs
    second = asyncio.ensure_future(anext(audio))
    assert await asyncio.to_thread(counting.running.wait, 30)  # LONG's run has begun

    second.cancel()  # as HA cancels the stream's task when the reply is cut
    with pytest.raises(asyncio.CancelledError):
        await second
    assert await voice.wait_idle()

    assert voice.texts == [SENTENCES[0], LONG]  # the third sentence was never handed over
    assert log == [("pulled", 0), ("pulled", 1)]
    assert counting.runs == runs_before  # LONG's run was ended before it finished
    assert await voice.speak(SENTENCES[2])  # and the session still speaks
    assert not voice.busy


async def test_a_consumer_that_stops_hands_nothing_more(voice: RecordingVoice) -> None:
    log: list[tuple[str, int]] = []
    audio = EmbeddedPiper(voice).synthesize(recorded(SENTENCES, log))

    assert (await anext(audio)).sentence == 0
    await audio.aclose()

    assert voice.texts == [SENTENCES[0]]
    assert log == [("pulled", 0)]
    assert not voice.busy


def busy(voice: LoadedPiperVoice) -> bool:
    """Return whether a sentence of ``voice`` is in a thread (unnarrowed, for mypy)."""
    return voice.busy


async def test_a_cancel_before_a_thread_takes_the_sentence_leaves_no_work(
    voice: RecordingVoice, counting: CountingPiper
) -> None:
    executor = ThreadPoolExecutor(max_workers=1)
    queued = LoadedPiperVoice(voice.file, counting, executor=executor)
    release = threading.Event()
    blocker = asyncio.get_running_loop().run_in_executor(executor, release.wait)
    try:
        task = asyncio.ensure_future(queued.speak(SENTENCES[0]))
        await asyncio.sleep(0)  # the sentence waits behind the blocker, the only worker
        assert busy(queued)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not busy(queued)  # nothing of it is left to run
    finally:
        release.set()
        await blocker
    assert await queued.speak(SENTENCES[1])  # the voice still works
    executor.shutdown()
    assert counting.pieces > 0  # ... and only the second sentence ever reached piper
    assert counting.texts == [SENTENCES[1]]


async def test_the_folder_loads_each_voice_once_and_keeps_only_the_last_used(
    tmp_path: Path,
) -> None:
    install_voice(tmp_path, "en_US-one-medium")
    install_voice(tmp_path, "en_US-two-medium")
    folder = PiperVoiceFolder(tmp_path, max_loaded=1)

    one = await folder.load("en_US-one-medium")
    assert await folder.load("en_US-one-medium") is one
    two = await folder.load("en_US-two-medium")
    assert await folder.load("en_US-one-medium") is not one  # evicted, loaded again
    assert two.name == "en_US-two-medium"
    assert [chunk.sentence async for chunk in EmbeddedPiper(two).synthesize(recorded(["Hi."], []))]


async def test_a_missing_voice_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VoiceFileError) as raised:
        await PiperVoiceFolder(tmp_path).load("en_US-gone-low")

    assert raised.value.voice == "en_US-gone-low"
    assert raised.value.path == tmp_path / "en_US-gone-low.onnx"


@pytest.mark.parametrize("broken", ["model", "config"])
async def test_a_corrupt_voice_is_a_clear_error(tmp_path: Path, broken: str) -> None:
    name = "en_US-broken-medium"
    model, config = tmp_path / f"{name}.onnx", tmp_path / f"{name}.onnx.json"
    model.write_bytes(
        b"not an onnx model" if broken == "model" else (JOE_DATA / f"{JOE}.onnx").read_bytes()
    )
    config.write_text("{" if broken == "config" else (JOE_DATA / f"{JOE}.onnx.json").read_text())

    with pytest.raises(VoiceFileError) as raised:
        await PiperVoiceFolder(tmp_path).load(name)

    assert raised.value.voice == name
    assert raised.value.path == model
    assert "not a usable Piper voice" in str(raised.value)


def test_the_folder_lists_complete_voices_and_reads_their_configs(tmp_path: Path) -> None:
    install_voice(tmp_path)
    (tmp_path / "de_DE-lonely-low.onnx").write_bytes(b"")  # no .onnx.json: skipped
    (tmp_path / "fr_FR-odd-low.onnx").write_bytes(b"")
    (tmp_path / "fr_FR-odd-low.onnx.json").write_text("[not, json")
    config = json.loads((JOE_DATA / f"{JOE}.onnx.json").read_text())
    config["language"] = {"code": "en_GB"}
    config["num_speakers"] = 3
    config["speaker_id_map"] = {"cy": 2, "ann": 0, "bob": 1, "bad": "x"}
    (tmp_path / "en_GB-pair-low.onnx").write_bytes(b"")
    (tmp_path / "en_GB-pair-low.onnx.json").write_text(json.dumps(config))

    found = list_voice_files(tmp_path)

    assert [f.voice for f in found] == [
        TtsVoice(name="en_GB-pair-low", languages=("en_GB",), speakers=("ann", "bob", "cy")),
        TtsVoice(name=JOE, languages=("en_US",)),
        TtsVoice(name="fr_FR-odd-low", languages=("fr_FR",)),  # guessed from the name
    ]
    assert found[1] == VoiceFile(
        voice=found[1].voice, model=tmp_path / f"{JOE}.onnx", config=tmp_path / f"{JOE}.onnx.json"
    )
    assert list_voice_files(tmp_path / "absent") == ()


PIPERLESS = """
import sys, types
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("piper", "onnxruntime"):
            raise ImportError(f"imported {name}")
        return None
sys.meta_path.insert(0, Block())
pkg = types.ModuleType("custom_components.companion_agent")
pkg.__path__ = [sys.argv[1]]
sys.modules["custom_components.companion_agent"] = pkg
from custom_components.companion_agent.engine.errors import SpeechEngineMissingError
from custom_components.companion_agent.engine.speech import check_piper, embedded
try:
    check_piper()
except SpeechEngineMissingError as err:
    print(err)
"""


def test_the_engine_imports_without_piper_and_says_when_it_is_missing() -> None:
    package = ROOT / "custom_components" / "companion_agent"
    result = subprocess.run(
        [sys.executable, "-c", PIPERLESS, str(package)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("piper-tts cannot be imported: imported piper")
