"""Festival's English voices as people in a test: any text, spoken by a distinct voice, as PCM.

``script/peers`` installs festival and its voices (Debian's packages, as root) for the
speaker tests; each voice here is one person. Their speech is 16 kHz, 16-bit mono, with
silence around it, as a satellite's microphone would send it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from pathlib import Path

RATE = 16000
VOICES = {
    "slt": "cmu_us_slt_arctic_hts",
    "kal": "kal_diphone",
    "ked": "ked_diphone",
}
"""The distinct English voices: a woman (slt) and two men (kal, ked)."""
SILENCE = b"\0\0" * (RATE // 4)


def festival_available() -> bool:
    """Say whether festival's ``text2wave`` is installed."""
    return shutil.which("text2wave") is not None


def festival_say(text: str, voice: str) -> bytes:
    """Return ``text`` spoken by festival's ``voice`` (a key of ``VOICES``) as PCM."""
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder, "text.txt"), Path(folder, "speech.wav")
        source.write_text(text, encoding="utf-8")
        subprocess.run(
            [
                "text2wave",
                "-F",
                str(RATE),
                "-eval",
                f"(voice_{VOICES[voice]})",
                str(source),
                "-o",
                str(target),
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        with wave.open(str(target), "rb") as reader:
            assert (reader.getframerate(), reader.getsampwidth()) == (RATE, 2)
            assert reader.getnchannels() == 1
            pcm = reader.readframes(reader.getnframes())
    return SILENCE + pcm + SILENCE


def write_wav(path: Path, pcm: bytes, rate: int = RATE) -> Path:
    """Write 16-bit mono ``pcm`` at ``rate`` as a WAV file at ``path``; return the path."""
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(pcm)
    return path
