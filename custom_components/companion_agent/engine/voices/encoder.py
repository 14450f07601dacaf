"""The speaker encoder: 16-bit PCM speech in, one 256-number voice embedding out, numpy only.

The network is Resemblyzer 0.1.4's GE2E encoder (three LSTM layers of 256 over 40 mel bands,
then a linear layer of 256 and a ReLU; Apache-2.0), its weights shipped beside this module as
``speaker_encoder.npz`` with their licence in ``speaker_encoder.LICENSE``
(``script/speaker-weights`` makes the file again from the published wheel). The front end is
the one it was trained on: 16 kHz, 25 ms Hann windows every 10 ms, 40 Slaney mel bands of
power, the volume raised to -30 dBFS, long silences cut. An utterance is cut into 1.6 s
partials that overlap (1.3 a second); all of them go through the network in one batch, and
the utterance's embedding is the normalised mean of theirs.

Silence is cut by frame energy (Resemblyzer used webrtcvad, which Home Assistant does not
ship): a 30 ms frame is speech when it is louder than ``SPEECH_FLOOR_DB`` and within
``SPEECH_RANGE_DB`` of the loudest frame, smoothed over 8 frames and widened by 3 on each side.

Embedding is CPU work for an executor thread. A ``SpeakerEncoder`` holds only read-only
arrays, so one instance serves any number of threads at once. Its network runs with one
BLAS thread, one utterance at a time (``_one_blas_thread``): it runs while Whisper uses the
cores, and BLAS threads that spin beside Whisper's made a 150 ms embedding take 1.6 s
(``benchmarks/speakers_home.py``). The limit is the process's, so it is set only while the
network runs and put back after.
"""

from __future__ import annotations

import math
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Self

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController

from ..errors import AudioFormatError, VoiceModelError

type Vector = npt.NDArray[np.float32]

SAMPLE_RATE: Final = 16_000
EMBEDDING_DIM: Final = 256
MEL_BANDS: Final = 40
HIDDEN: Final = 256
LAYERS: Final = 3
N_FFT: Final = 400
HOP: Final = 160
PARTIAL_FRAMES: Final = 160
PARTIALS_PER_SECOND: Final = 1.3
MIN_COVERAGE: Final = 0.75
TARGET_DBFS: Final = -30.0
MIN_SPEECH_SECONDS: Final = 0.8
"""Less speech than this after the silences are cut gives no embedding (too little to tell)."""
MAX_SECONDS: Final = 30.0
"""Only the first 30 s of an utterance are heard: a bound on the work one call does."""
MIN_RATE: Final = 8_000
MAX_RATE: Final = 96_000
VAD_FRAME: Final = 480
VAD_SMOOTHING: Final = 8
VAD_WIDEN: Final = 6
SPEECH_FLOOR_DB: Final = -45.0
SPEECH_RANGE_DB: Final = 40.0

_BLAS_LOCK = threading.Lock()
_BLAS: list[ThreadpoolController] = []


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Run the block with one BLAS thread, one block at a time; put the limit back after."""
    with _BLAS_LOCK:
        if not _BLAS:  # found once, in the first embedding's executor thread
            _BLAS.append(ThreadpoolController())
        with _BLAS[0].limit(limits=1, user_api="blas"):
            yield


WEIGHTS: Final = Path(__file__).with_name("speaker_encoder.npz")
"""The weights shipped with the package (float16, converted from Resemblyzer 0.1.4)."""

WEIGHT_SHAPES: Final[dict[str, tuple[int, ...]]] = {
    **{
        name: shape
        for layer in range(LAYERS)
        for name, shape in (
            (f"lstm__weight_ih_l{layer}", (4 * HIDDEN, MEL_BANDS if layer == 0 else HIDDEN)),
            (f"lstm__weight_hh_l{layer}", (4 * HIDDEN, HIDDEN)),
            (f"lstm__bias_ih_l{layer}", (4 * HIDDEN,)),
            (f"lstm__bias_hh_l{layer}", (4 * HIDDEN,)),
        )
    },
    "linear__weight": (EMBEDDING_DIM, HIDDEN),
    "linear__bias": (EMBEDDING_DIM,),
}
"""Every array the weights file holds, by name (PyTorch's, dots as ``__``), and its shape."""

_INT16_FULL = 32768.0


@dataclass(frozen=True, slots=True, eq=False)
class Embedding:
    """One voice, as 256 numbers of unit length; its repr never shows them.

    Two embeddings of the same voice have a cosine near 1, of different voices lower; two
    are equal when their numbers are.
    """

    vector: Vector

    def __eq__(self, other: object) -> bool:
        """Say whether ``other`` is an embedding with the very same numbers."""
        return isinstance(other, Embedding) and np.array_equal(self.vector, other.vector)

    def __hash__(self) -> int:
        """Hash the numbers, so equal embeddings hash alike."""
        return hash(self.vector.tobytes())

    @classmethod
    def of(cls, values: npt.ArrayLike) -> Self:
        """Return the embedding of ``values``, normalised; ValueError if they cannot be one.

        They must be ``EMBEDDING_DIM`` finite numbers, not all zero.
        """
        array = np.array(values, dtype=np.float32).reshape(-1)
        if array.shape != (EMBEDDING_DIM,):
            raise ValueError(f"an embedding has {EMBEDDING_DIM} numbers, not {array.size}")
        if not np.all(np.isfinite(array)):
            raise ValueError("an embedding's numbers must be finite")
        norm = float(np.linalg.norm(array))
        if norm < 1e-6:
            raise ValueError("an embedding cannot be all zeros")
        array /= norm
        array.setflags(write=False)
        return cls(array)

    def cosine(self, other: Embedding) -> float:
        """Return the cosine of this voice and ``other`` (1 the same, lower the further)."""
        return float(np.dot(self.vector, other.vector))

    def __repr__(self) -> str:
        """Say what it is, never the numbers (a voiceprint is personal data)."""
        return f"Embedding(<{self.vector.size} numbers>)"


def _hz_to_mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return Slaney's mel of each frequency: linear below 1 kHz, logarithmic above."""
    linear = hz / (200.0 / 3)
    log_part = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (math.log(6.4) / 27.0)
    return np.where(hz >= 1000.0, log_part, linear)


def _mel_to_hz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return the frequency of each Slaney mel (the inverse of ``_hz_to_mel``)."""
    linear = mel * (200.0 / 3)
    log_part = 1000.0 * np.exp((math.log(6.4) / 27.0) * (mel - 15.0))
    return np.where(mel >= 15.0, log_part, linear)


def mel_filterbank() -> Vector:
    """Return the (40, 201) Slaney-normalised mel filters the encoder was trained with."""
    fft_hz = np.fft.rfftfreq(N_FFT, 1.0 / SAMPLE_RATE)
    edges = _mel_to_hz(
        np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(SAMPLE_RATE / 2)), MEL_BANDS + 2)
    )
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_hz[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    filters = np.maximum(0.0, np.minimum(lower, upper))
    filters *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    result: Vector = filters.astype(np.float32)
    return result


_MEL: Final = mel_filterbank()
_MEL.setflags(write=False)
_WINDOW: Final = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)
_WINDOW.setflags(write=False)


def mel_frames(wav: Vector) -> Vector:
    """Return the (1 + len // 160, 40) power mel spectrogram of 16 kHz float samples."""
    padded = np.pad(wav, (N_FFT // 2, N_FFT // 2))
    count = 1 + (len(padded) - N_FFT) // HOP
    index = np.arange(N_FFT)[None, :] + HOP * np.arange(count)[:, None]
    spectrum = np.fft.rfft(padded[index] * _WINDOW, n=N_FFT, axis=1)
    power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
    return power @ _MEL.T


def resample(wav: Vector, rate: int) -> Vector:
    """Return ``wav`` at 16 kHz, band-limited (FFT resampling); AudioFormatError out of range."""
    if rate == SAMPLE_RATE:
        return wav
    if not MIN_RATE <= rate <= MAX_RATE:
        raise AudioFormatError(f"speech at {rate} Hz cannot be heard: {MIN_RATE}-{MAX_RATE} Hz")
    count = round(len(wav) * SAMPLE_RATE / rate)
    if count == 0:
        return np.zeros(0, np.float32)
    spectrum = np.fft.rfft(wav)
    bins = count // 2 + 1
    if bins <= len(spectrum):
        spectrum = spectrum[:bins]
    else:
        spectrum = np.pad(spectrum, (0, bins - len(spectrum)))
    return (np.fft.irfft(spectrum, n=count) * (count / len(wav))).astype(np.float32)


def louder(wav: Vector) -> Vector:
    """Return ``wav`` raised to -30 dBFS RMS (never lowered: a loud voice stays as it is)."""
    rms = float(np.sqrt(np.mean(np.square(wav, dtype=np.float64)))) if len(wav) else 0.0
    if rms <= 0.0:
        return wav
    gain_db = TARGET_DBFS - 20.0 * math.log10(rms)
    return wav if gain_db < 0 else (wav * 10.0 ** (gain_db / 20.0)).astype(np.float32)


def speech_only(wav: Vector) -> Vector:
    """Return ``wav`` with its long silences cut, by frame energy (see the module's note)."""
    usable = len(wav) - len(wav) % VAD_FRAME
    if usable == 0:
        return wav[:0]
    frames = wav[:usable].reshape(-1, VAD_FRAME).astype(np.float64)
    level = 10.0 * np.log10(np.mean(frames * frames, axis=1) + 1e-12)
    voiced = (level > SPEECH_FLOOR_DB) & (level > level.max() - SPEECH_RANGE_DB)
    padded = np.concatenate(
        (
            np.zeros((VAD_SMOOTHING - 1) // 2),
            voiced.astype(np.float64),
            np.zeros(VAD_SMOOTHING // 2),
        )
    )
    window = np.convolve(padded, np.ones(VAD_SMOOTHING), mode="valid") / VAD_SMOOTHING
    smoothed = np.round(window).astype(bool)
    reach = VAD_WIDEN + 1
    widened = np.convolve(smoothed.astype(np.int32), np.ones(reach, np.int32), mode="full")
    start = reach - 1 - reach // 2
    keep = widened[start : start + len(smoothed)] > 0
    return wav[:usable][np.repeat(keep, VAD_FRAME)]


def partial_starts(samples: int) -> list[int]:
    """Return the first mel frame of each 1.6 s partial of an utterance of ``samples``."""
    frames = math.ceil((samples + 1) / HOP)
    step = round(SAMPLE_RATE / PARTIALS_PER_SECOND / HOP)
    starts = list(range(0, max(1, frames - PARTIAL_FRAMES + step + 1), step))
    coverage = (samples - starts[-1] * HOP) / (PARTIAL_FRAMES * HOP)
    if coverage < MIN_COVERAGE and len(starts) > 1:
        starts.pop()
    return starts


def _sigmoid(x: Vector) -> Vector:
    """Return the logistic function of ``x``, written with tanh so it never overflows."""
    result: Vector = (0.5 * (1.0 + np.tanh(0.5 * x))).astype(np.float32)
    return result


@dataclass(frozen=True, slots=True)
class _Layer:
    """One LSTM layer, transposed for ``x @ w``, its two biases summed."""

    input_weights: Vector
    hidden_weights: Vector
    bias: Vector


class SpeakerEncoder:
    """The GE2E speaker encoder over read-only weights: ``embed`` PCM, get an ``Embedding``."""

    __slots__ = ("_layers", "_linear_bias", "_linear_weights")

    def __init__(self, arrays: dict[str, Vector]) -> None:
        """Take the weights by name (see ``WEIGHT_SHAPES``), already checked."""
        layers = []
        for layer in range(LAYERS):
            layers.append(
                _Layer(
                    input_weights=_frozen(arrays[f"lstm__weight_ih_l{layer}"].T),
                    hidden_weights=_frozen(arrays[f"lstm__weight_hh_l{layer}"].T),
                    bias=_frozen(
                        arrays[f"lstm__bias_ih_l{layer}"] + arrays[f"lstm__bias_hh_l{layer}"]
                    ),
                )
            )
        self._layers = tuple(layers)
        self._linear_weights = _frozen(arrays["linear__weight"].T)
        self._linear_bias = _frozen(arrays["linear__bias"])

    @classmethod
    def load(cls, path: Path | None = None) -> SpeakerEncoder:
        """Read the weights at ``path`` (default: those shipped); VoiceModelError if unusable.

        Blocking file work: run it in an executor.
        """
        source = WEIGHTS if path is None else path
        return cls(read_weights(source))

    def embed(self, pcm: bytes, *, rate: int = SAMPLE_RATE) -> Embedding | None:
        """Return the voice of 16-bit mono little-endian ``pcm``; None with too little speech.

        Audio at another rate between 8 and 96 kHz is resampled to 16 kHz; outside that range
        it is refused with AudioFormatError. A trailing odd byte is ignored, as is anything
        after the first 30 s. CPU work (about 0.1 s for 3 s of speech): run it in an executor.
        """
        usable = min(len(pcm) - len(pcm) % 2, int(MAX_SECONDS * rate) * 2)
        samples = np.frombuffer(pcm[:usable], dtype="<i2").astype(np.float32) / _INT16_FULL
        with _one_blas_thread():  # the whole computation: the same numbers in any thread
            wav = speech_only(louder(resample(samples, rate)))
            if len(wav) < MIN_SPEECH_SECONDS * SAMPLE_RATE:
                return None
            starts = partial_starts(len(wav))
            needed = (starts[-1] + PARTIAL_FRAMES) * HOP
            if needed >= len(wav):
                wav = np.pad(wav, (0, needed - len(wav)))
            mel = mel_frames(wav)
            partials = self.forward(np.stack([mel[s : s + PARTIAL_FRAMES] for s in starts]))
        mean = partials.mean(axis=0)
        try:
            return Embedding.of(mean)
        except ValueError:
            return None

    def forward(self, mels: Vector) -> Vector:
        """Return the unit embeddings (batch, 256) of mel partials (batch, frames, 40)."""
        batch, frames, _ = mels.shape
        x = mels.astype(np.float32)
        hidden = np.zeros((batch, HIDDEN), np.float32)
        for layer in self._layers:
            gates_in = (x.reshape(batch * frames, -1) @ layer.input_weights + layer.bias).reshape(
                batch, frames, 4 * HIDDEN
            )
            hidden = np.zeros((batch, HIDDEN), np.float32)
            cell = np.zeros((batch, HIDDEN), np.float32)
            out = np.empty((batch, frames, HIDDEN), np.float32)
            for t in range(frames):
                gates = gates_in[:, t] + hidden @ layer.hidden_weights
                in_gate = _sigmoid(gates[:, :HIDDEN])
                forget_gate = _sigmoid(gates[:, HIDDEN : 2 * HIDDEN])
                candidate = np.tanh(gates[:, 2 * HIDDEN : 3 * HIDDEN])
                out_gate = _sigmoid(gates[:, 3 * HIDDEN :])
                cell = forget_gate * cell + in_gate * candidate
                hidden = out_gate * np.tanh(cell)
                out[:, t] = hidden
            x = out
        embeddings = np.maximum(hidden @ self._linear_weights + self._linear_bias, 0.0)
        norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
        result: Vector = (embeddings / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


def read_weights(path: Path) -> dict[str, Vector]:
    """Return the encoder's arrays from an npz file as float32; VoiceModelError if unusable.

    The file must hold exactly the arrays of ``WEIGHT_SHAPES``, finite; no pickled objects.
    """
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except FileNotFoundError as err:
        raise VoiceModelError("the speaker encoder's weights are missing", path=path) from err
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as err:
        raise VoiceModelError(
            f"the speaker encoder's weights cannot be read ({type(err).__name__})", path=path
        ) from err
    if set(arrays) != set(WEIGHT_SHAPES):
        missing = sorted(set(WEIGHT_SHAPES) - set(arrays))
        extra = sorted(set(arrays) - set(WEIGHT_SHAPES))
        raise VoiceModelError(
            f"not the speaker encoder's weights (missing {missing}, unexpected {extra})",
            path=path,
        )
    checked: dict[str, Vector] = {}
    for name, shape in WEIGHT_SHAPES.items():
        array = arrays[name]
        if array.shape != shape or array.dtype.kind != "f":
            raise VoiceModelError(
                f"{name} is {array.dtype} {array.shape}, not float {shape}", path=path
            )
        converted = array.astype(np.float32)
        if not np.all(np.isfinite(converted)):
            raise VoiceModelError(f"{name} holds numbers that are not finite", path=path)
        checked[name] = converted
    return checked


def _frozen(array: Vector) -> Vector:
    """Return a contiguous read-only float32 copy of ``array``."""
    copy = np.ascontiguousarray(array, dtype=np.float32).copy()
    copy.setflags(write=False)
    return copy
