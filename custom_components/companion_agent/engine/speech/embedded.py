"""Piper in this process (piper-tts): a voice is loaded once, sentences run in a worker thread.

piper-tts is optional: nothing here imports it until a voice is loaded, and then only in a
worker thread. A sentence's synthesis is one job in the loop's default executor; a voice
hands the executor one sentence at a time (other streams wait on the event loop, never in a
thread queue), and a stream hands over its next sentence only after the last one's audio.
Closing a stream hands no more sentences over; the sentence already in the thread is ended
mid-run (onnxruntime's RunOptions.terminate) and its audio dropped.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..chars import clean_text
from ..errors import SpeechEngineMissingError, VoiceFileError
from .synthesizer import AudioChunk
from .voice_folder import MODEL_SUFFIX, VoiceFile, list_voice_files

if TYPE_CHECKING:
    from piper import PiperVoice

LOGGER = logging.getLogger(__name__)

SAMPLE_WIDTH = 2
WARM_UP_TEXT = "Ready."


def check_piper() -> None:
    """Import piper-tts (blocking), or raise SpeechEngineMissingError saying why not."""
    try:
        import piper  # noqa: F401, PLC0415 - optional, imported on demand
    except (ImportError, OSError) as err:
        raise SpeechEngineMissingError(f"piper-tts cannot be imported: {err}") from err


class LoadedPiperVoice:
    """A Piper voice in memory; one of its sentences at a time runs in a worker thread."""

    def __init__(
        self, file: VoiceFile, voice: PiperVoice, *, executor: Executor | None = None
    ) -> None:
        """Wrap a voice piper has loaded from ``file``; sentences run in ``executor``.

        None is the loop's default executor (Home Assistant's, in Home Assistant).
        """
        self.file = file
        self._executor = executor
        self.rate = voice.config.sample_rate
        if not isinstance(voice.session, _TerminableSession):
            voice.session = _TerminableSession(voice.session)
        self._session: _TerminableSession = voice.session
        self._voice = voice
        self._speaker_ids = dict(voice.config.speaker_id_map)
        self._lock = asyncio.Lock()
        self._running = 0
        self._running_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()

    @classmethod
    async def load(cls, file: VoiceFile) -> LoadedPiperVoice:
        """Load and warm up the voice in a worker thread, or raise VoiceFileError."""
        loop = asyncio.get_running_loop()
        voice = await loop.run_in_executor(None, _load, file)
        return cls(file, voice)

    @property
    def name(self) -> str:
        """Return the voice's name (its file name without ``.onnx``)."""
        return self.file.voice.name

    @property
    def busy(self) -> bool:
        """Return whether a sentence of this voice is in a worker thread right now."""
        return not self._idle.is_set()

    async def wait_idle(self, seconds: float = 10.0) -> bool:
        """Wait until no sentence of this voice is in a worker thread; say if that happened."""
        return await asyncio.get_running_loop().run_in_executor(None, self._idle.wait, seconds)

    async def speak(self, text: str, speaker: str | None = None) -> bytes:
        """Return the 16-bit mono PCM for ``text``; a cancel stops the thread's work early."""
        speaker_id = self._speaker_ids.get(speaker) if speaker is not None else None
        async with self._lock:
            job = _Job()
            with self._running_lock:
                self._running += 1
                self._idle.clear()
            future = asyncio.get_running_loop().run_in_executor(
                self._executor, self._speak_blocking, job, text, speaker_id
            )
            try:
                return await future
            finally:
                job.stop.set()  # cancelled or done: either way the thread stops at once
                job.terminate()
                with self._running_lock:
                    if not job.started:  # cancelled before a thread took it: it never will
                        job.started = True
                        self._finished_locked()

    def _speak_blocking(self, job: _Job, text: str, speaker_id: int | None) -> bytes:
        """Synthesize ``text`` piece by piece until it ends or the job stops (in a thread)."""
        from piper import SynthesisConfig  # noqa: PLC0415 - optional dependency

        with self._running_lock:
            if job.started:  # given up before it began
                return b""
            job.started = True
        try:
            job.options = self._session.use_new_options()
            pcm = bytearray()
            pieces = iter(self._voice.synthesize(text, SynthesisConfig(speaker_id=speaker_id)))
            while not job.stop.is_set() and (piece := next(pieces, None)) is not None:
                pcm += piece.audio_int16_bytes
            return bytes(pcm)
        except Exception:
            if job.stop.is_set():  # the run was terminated by a cancel
                return b""
            raise
        finally:
            with self._running_lock:
                self._finished_locked()

    def _finished_locked(self) -> None:
        """Count one job less; mark the voice idle when none is left (hold the lock)."""
        self._running -= 1
        if self._running == 0:
            self._idle.set()


class _Job:
    """One sentence handed to a worker thread: taken yet, its stop flag, its ONNX run."""

    __slots__ = ("options", "started", "stop")

    def __init__(self) -> None:
        """Start neither taken nor stopped."""
        self.started = False
        self.stop = threading.Event()
        self.options: Any = None  # onnxruntime.RunOptions once a thread runs it

    def terminate(self) -> None:
        """End the ONNX run in progress, if any (onnxruntime allows it from another thread)."""
        if self.options is not None:
            self.options.terminate = True


class _TerminableSession:
    """Piper's ONNX session, run with each thread's own RunOptions so a cancel can end it."""

    def __init__(self, session: Any) -> None:
        """Wrap the session piper loaded."""
        self._session = session
        self._current = threading.local()

    def use_new_options(self) -> Any:
        """Give the calling thread fresh RunOptions for its next runs and return them."""
        onnxruntime = importlib.import_module("onnxruntime")
        self._current.options = onnxruntime.RunOptions()
        return self._current.options

    def run(self, output_names: Any, input_feed: Any, run_options: Any = None) -> Any:
        """Run the model with the calling thread's RunOptions (piper passes none)."""
        options = run_options or getattr(self._current, "options", None)
        return self._session.run(output_names, input_feed, options)

    def __getattr__(self, name: str) -> Any:
        """Pass anything else on to the session."""
        return getattr(self._session, name)


class EmbeddedPiper:
    """Speak sentences with a loaded Piper voice (and one of its speakers), one at a time."""

    def __init__(self, voice: LoadedPiperVoice, speaker: str | None = None) -> None:
        """Bind the voice and speaker; load nothing."""
        self.voice = voice
        self.speaker = speaker

    async def synthesize(self, sentences: AsyncIterator[str]) -> AsyncGenerator[AudioChunk]:
        """Speak each non-empty sentence once it arrives and yield its audio before the next.

        A sentence piper fails on is logged and skipped; the rest are still spoken.
        """
        index = -1
        async for sentence in sentences:
            text = sentence.strip()
            if not text:
                continue
            index += 1
            try:
                pcm = await self.voice.speak(text, self.speaker)
            except Exception as err:  # a bad sentence must not end the reply
                LOGGER.warning("Piper %s skipped sentence %d: %r", self.voice.name, index, err)
                continue
            if pcm:
                yield AudioChunk(
                    sentence=index, rate=self.voice.rate, width=SAMPLE_WIDTH, channels=1, audio=pcm
                )


class PiperVoiceFolder:
    """The Piper voices of one folder; the last ``max_loaded`` used stay loaded."""

    def __init__(self, folder: Path, *, max_loaded: int = 2) -> None:
        """Remember the folder; read and load nothing yet."""
        self.folder = folder
        self._max_loaded = max_loaded
        self._loaded: OrderedDict[str, LoadedPiperVoice] = OrderedDict()
        self._lock = asyncio.Lock()

    async def voices(self) -> tuple[VoiceFile, ...]:
        """List the folder's voices (in a worker thread)."""
        return await asyncio.get_running_loop().run_in_executor(None, list_voice_files, self.folder)

    async def load(self, name: str) -> LoadedPiperVoice:
        """Return the voice ``name``, loading it the first time, or raise VoiceFileError."""
        async with self._lock:
            if (loaded := self._loaded.get(name)) is not None:
                self._loaded.move_to_end(name)
                return loaded
            file = next((f for f in await self.voices() if f.voice.name == name), None)
            if file is None:
                raise VoiceFileError(
                    "no such voice file (a .onnx with its .onnx.json)",
                    voice=name,
                    path=self.folder / f"{name}{MODEL_SUFFIX}",
                )
            loaded = await LoadedPiperVoice.load(file)
            self._loaded[name] = loaded
            while len(self._loaded) > self._max_loaded:
                self._loaded.popitem(last=False)
            return loaded


def _load(file: VoiceFile) -> PiperVoice:
    """Load the voice and speak a word with it (blocking), or raise what is wrong."""
    check_piper()
    from piper import PiperVoice  # noqa: PLC0415 - optional dependency

    try:
        voice = PiperVoice.load(file.model, config_path=file.config)
        for _ in voice.synthesize(WARM_UP_TEXT):
            pass
    except Exception as err:  # any failure: these files are no usable voice
        raise VoiceFileError(
            clean_text(f"not a usable Piper voice: {err!r}", 300),
            voice=file.voice.name,
            path=file.model,
        ) from err
    return voice
