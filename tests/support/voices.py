"""The test voices script/peers makes in .peers/voices: the same sentences in several voices.

``.peers/voices/<speaker>/<NN>.wav`` holds 16 kHz mono 16-bit recordings of household
sentences (Festival's voices and Piper's joe).
"""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.voices import Embedding

ROOT = Path(__file__).resolve().parents[2]
VOICES = ROOT / ".peers" / "voices"

type Voices = dict[str, list[Embedding]]
"""Each speaker's utterances' embeddings, in order."""


def voices_dir() -> Path:
    """Return .peers/voices; fail the test, saying what to run, when it was never made."""
    if not VOICES.is_dir() or not any(VOICES.glob("*/*.wav")):
        pytest.fail(f"no test voices in {VOICES}: run script/peers voices (as root)")
    return VOICES


def speakers(folder: Path | None = None) -> list[str]:
    """Return the speakers in ``folder`` (default .peers/voices), sorted."""
    base = voices_dir() if folder is None else folder
    return sorted(p.name for p in base.iterdir() if p.is_dir() and any(p.glob("*.wav")))


def utterances(speaker: str, folder: Path | None = None) -> list[Path]:
    """Return one speaker's recordings, in order."""
    base = voices_dir() if folder is None else folder
    return sorted((base / speaker).glob("*.wav"))


def pcm_of(path: Path) -> tuple[bytes, int]:
    """Return a 16-bit mono WAV file's PCM and its sample rate."""
    with wave.open(str(path), "rb") as file:
        if file.getnchannels() != 1 or file.getsampwidth() != 2:
            raise ValueError(f"{path} is not 16-bit mono")
        return file.readframes(file.getnframes()), file.getframerate()
