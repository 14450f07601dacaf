"""The speaker encoder: its shipped weights, what it makes of speech, silence and bad files."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from custom_components.companion_agent.engine.errors import AudioFormatError, VoiceModelError
from custom_components.companion_agent.engine.voices import EMBEDDING_DIM, SpeakerEncoder
from custom_components.companion_agent.engine.voices.encoder import (
    WEIGHT_SHAPES,
    WEIGHTS,
    Embedding,
    Vector,
)
from tests.support.voices import Voices, pcm_of, utterances


def test_the_shipped_weights_are_the_encoders_arrays_in_float16() -> None:
    """Every array the network needs, no other, each of its shape, stored as float16."""
    with np.load(WEIGHTS, allow_pickle=False) as archive:
        shapes = {name: archive[name].shape for name in archive.files}
        dtypes = {archive[name].dtype for name in archive.files}
    assert shapes == WEIGHT_SHAPES
    assert dtypes == {np.dtype("float16")}
    licence = WEIGHTS.with_suffix(".LICENSE").read_text(encoding="utf-8")
    assert "Resemblyzer" in licence
    assert "Apache License" in licence


def test_an_utterance_gives_the_same_unit_embedding_every_time(encoder: SpeakerEncoder) -> None:
    """The same speech twice, or from a second encoder, is the same 256 numbers of length 1."""
    pcm, rate = pcm_of(utterances("kal")[0])
    first = encoder.embed(pcm, rate=rate)
    again = encoder.embed(pcm, rate=rate)
    other = SpeakerEncoder.load().embed(pcm, rate=rate)
    assert first is not None
    assert again is not None
    assert other is not None
    assert first.vector.shape == (EMBEDDING_DIM,)
    assert np.array_equal(first.vector, again.vector)
    assert np.array_equal(first.vector, other.vector)
    assert first == again
    assert len({first, again, other}) == 1
    assert abs(float(np.linalg.norm(first.vector)) - 1.0) < 1e-5


def test_threads_sharing_one_encoder_get_what_one_thread_gets(encoder: SpeakerEncoder) -> None:
    """Four threads embedding four voices at once each get what embedding alone gives."""
    paths = [utterances(name)[1] for name in ("kal", "slt", "joe", "krb")]
    alone = [encoder.embed(pcm_of(path)[0]) for path in paths]
    together: list[Embedding | None] = [None] * len(paths)

    def embed(index: int) -> None:
        together[index] = encoder.embed(pcm_of(paths[index])[0])

    threads = [threading.Thread(target=embed, args=(i,)) for i in range(len(paths))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for one, many in zip(alone, together, strict=True):
        assert one is not None
        assert many is not None
        assert np.array_equal(one.vector, many.vector)


def test_the_same_voice_is_closer_than_another(voices: Voices) -> None:
    """Two utterances of one voice have a higher cosine than utterances of two voices."""
    kal, slt = voices["kal"], voices["slt"]
    assert kal[0].cosine(kal[1]) > 0.8
    assert kal[0].cosine(slt[0]) < kal[0].cosine(kal[1]) - 0.1


def test_too_little_speech_gives_no_embedding(encoder: SpeakerEncoder) -> None:
    """Silence, nothing, one odd byte and half a second of speech are too little to tell."""
    pcm, _ = pcm_of(utterances("kal")[0])
    samples = np.frombuffer(pcm, "<i2")
    loudest = int(np.argmax(np.abs(samples)))
    half_second = samples[max(0, loudest - 4000) : loudest + 4000].tobytes()
    assert encoder.embed(bytes(16000 * 2 * 3)) is None
    assert encoder.embed(b"") is None
    assert encoder.embed(b"\x01") is None
    assert encoder.embed(half_second) is None


def test_speech_at_8_khz_is_heard_as_the_same_voice(encoder: SpeakerEncoder) -> None:
    """A voice's utterance taken down to 8 kHz (every second sample) is still that voice."""
    pcm, _ = pcm_of(utterances("slt")[2])
    wide = encoder.embed(pcm)
    narrow = encoder.embed(np.frombuffer(pcm, "<i2")[::2].tobytes(), rate=8000)
    odd = encoder.embed(pcm + b"\x07")
    assert wide is not None
    assert narrow is not None
    assert odd is not None
    assert wide.cosine(narrow) > 0.8
    assert wide.cosine(odd) > 0.999


def test_a_rate_out_of_range_is_refused(encoder: SpeakerEncoder) -> None:
    """4 kHz audio is refused with an audio error naming the rate."""
    with pytest.raises(AudioFormatError, match="4000 Hz"):
        encoder.embed(bytes(8000), rate=4000)


def test_an_embeddings_repr_shows_no_numbers(voices: Voices) -> None:
    """A voiceprint is personal: its repr says what it is and never prints the numbers."""
    text = repr(voices["kal"][0])
    assert text == f"Embedding(<{EMBEDDING_DIM} numbers>)"
    assert not re.search(r"\d\.\d", text)


def test_an_embedding_must_be_256_finite_numbers() -> None:
    """Wrong length, NaN and all zeros are refused; the numbers are normalised and read-only."""
    for bad in ([0.1] * 255, [float("nan")] * EMBEDDING_DIM, [0.0] * EMBEDDING_DIM):
        with pytest.raises(ValueError, match="embedding"):
            Embedding.of(bad)
    made = Embedding.of([2.0] * EMBEDDING_DIM)
    assert abs(float(np.linalg.norm(made.vector)) - 1.0) < 1e-6
    with pytest.raises(ValueError, match="read-only"):
        made.vector[0] = 1.0


def test_missing_damaged_or_foreign_weights_are_a_voice_model_error(tmp_path: Path) -> None:
    """No file, a file that is no npz, missing arrays and a wrong shape each name the file."""
    with np.load(WEIGHTS) as archive:
        arrays = {name: archive[name] for name in archive.files}
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(WEIGHTS.read_bytes()[:5000])
    short = tmp_path / "short.npz"
    np.savez(short, **{k: v for k, v in arrays.items() if k != "linear__bias"})
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, **{**arrays, "linear__weight": np.zeros((128, 256), np.float32)})
    nan = tmp_path / "nan.npz"
    np.savez(nan, **{**arrays, "linear__bias": np.full(256, np.nan, np.float32)})
    for path, why in (
        (tmp_path / "missing.npz", "missing"),
        (damaged, "cannot be read"),
        (short, "missing \\['linear__bias'\\]"),
        (wrong, "linear__weight"),
        (nan, "not finite"),
    ):
        with pytest.raises(VoiceModelError, match=why) as caught:
            SpeakerEncoder.load(path)
        assert caught.value.path == path


def test_hostile_audio_gives_a_unit_embedding_or_none(encoder: SpeakerEncoder) -> None:
    """Full-scale noise, a clipped square wave and a minute of speech never break it."""
    rng = np.random.default_rng(3)
    noise = rng.integers(-32768, 32767, 16000 * 3, dtype=np.int16).tobytes()
    square = np.tile(np.array([32767] * 20 + [-32768] * 20, np.int16), 1200).tobytes()
    pcm, _ = pcm_of(utterances("joe")[0])
    minute = pcm * (16000 * 60 * 2 // len(pcm) + 1)
    for audio in (noise, square, minute):
        embedding = encoder.embed(audio)
        assert embedding is not None
        assert abs(float(np.linalg.norm(embedding.vector)) - 1.0) < 1e-5


def test_speech_at_48_khz_is_heard_as_the_same_voice(encoder: SpeakerEncoder) -> None:
    """The same utterance held three times as long per sample, at 48 kHz, is that voice."""
    pcm, _ = pcm_of(utterances("krb")[3])
    wide = encoder.embed(pcm)
    tripled = encoder.embed(np.repeat(np.frombuffer(pcm, "<i2"), 3).tobytes(), rate=48000)
    assert wide is not None
    assert tripled is not None
    assert wide.cosine(tripled) > 0.95


class Watched(SpeakerEncoder):
    """The encoder, noting how many BLAS threads each run of its network has."""

    seen: ClassVar[list[list[int]]] = []

    def forward(self, mels: Vector) -> Vector:
        """Note the BLAS threads, then run the network."""
        blas = ThreadpoolController().select(user_api="blas").info()
        self.seen.append([int(info["num_threads"]) for info in blas])
        return super().forward(mels)


def test_the_network_runs_on_one_blas_thread_and_gives_the_process_its_threads_back() -> None:
    """BLAS threads that spin beside Whisper's slow an embedding tenfold: one while it runs."""
    controller = ThreadpoolController()
    before = [int(info["num_threads"]) for info in controller.select(user_api="blas").info()]

    assert Watched.load().embed(pcm_of(utterances("slt")[2])[0]) is not None
    after = [int(info["num_threads"]) for info in controller.select(user_api="blas").info()]

    assert before  # numpy's BLAS is found
    assert Watched.seen == [[1] * len(before)]
    assert after == before
