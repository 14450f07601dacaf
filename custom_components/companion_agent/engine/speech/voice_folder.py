"""Piper voices in a folder: ``<name>.onnx`` beside ``<name>.onnx.json``, read tolerantly.

Everything here blocks on the disk: call it off the event loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .info import TtsVoice

MODEL_SUFFIX = ".onnx"
CONFIG_SUFFIX = ".onnx.json"
MAX_VOICES = 100
MAX_CONFIG_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class VoiceFile:
    """One voice in the folder: what it says about itself and where its two files are."""

    voice: TtsVoice
    model: Path
    config: Path


def list_voice_files(folder: Path) -> tuple[VoiceFile, ...]:
    """Return the folder's voices by name (at most MAX_VOICES); a missing folder has none.

    A model without its ``.onnx.json`` is skipped; a config that cannot be read still lists
    the voice (its language guessed from the name), so loading it says what is wrong.
    """
    if not folder.is_dir():
        return ()
    models = sorted(p for p in folder.glob(f"*{MODEL_SUFFIX}") if p.is_file())
    found: list[VoiceFile] = []
    for model in models:
        config = model.with_name(model.name + ".json")
        if not config.is_file():
            continue
        found.append(VoiceFile(voice=_describe(model.stem, config), model=model, config=config))
        if len(found) == MAX_VOICES:
            break
    return tuple(found)


def _describe(name: str, config: Path) -> TtsVoice:
    """Return the voice ``name`` as its config describes it, or as its name suggests."""
    data = _read_config(config)
    language = data.get("language")
    code = language.get("code") if isinstance(language, dict) else None
    if not isinstance(code, str) or not code:
        code = name.split("-", 1)[0]
    speakers = data.get("speaker_id_map")
    names: tuple[str, ...] = ()
    if isinstance(speakers, dict) and len(speakers) > 1:
        names = tuple(
            speaker
            for speaker, _ in sorted(
                ((k, v) for k, v in speakers.items() if isinstance(v, int)),
                key=lambda item: item[1],
            )
        )
    return TtsVoice(name=name, languages=(code,), speakers=names)


def _read_config(config: Path) -> dict[str, object]:
    """Return the config's top-level object, or an empty one if it is not readable JSON."""
    try:
        if config.stat().st_size > MAX_CONFIG_BYTES:
            return {}
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
