"""ffmpeg for Home Assistant's TTS converter: imageio-ffmpeg's static build, on ``PATH``.

HA runs ``ffmpeg`` from ``PATH`` (its ``ffmpeg`` integration's default binary) whenever a
TTS request names a format the engine did not make. These machines have no ffmpeg;
imageio-ffmpeg (PyPI, requirements_test.txt) ships one. For the session it is linked as
``ffmpeg`` into a folder put first on ``PATH``, so tests and benchmarks run the converting
paths for real. The engine-only venv has no imageio-ffmpeg and no HA: nothing is done there.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def link_ffmpeg(folder: Path) -> Path | None:
    """Link imageio-ffmpeg's binary into ``folder`` as ``ffmpeg``; return the link (None: none)."""
    try:
        imageio_ffmpeg = importlib.import_module("imageio_ffmpeg")  # untyped
    except ImportError:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "ffmpeg"
    link.unlink(missing_ok=True)
    link.symlink_to(Path(str(imageio_ffmpeg.get_ffmpeg_exe())))
    return link


@contextmanager
def ffmpeg_on_path() -> Iterator[Path | None]:
    """Put imageio-ffmpeg's binary first on ``PATH`` as ``ffmpeg``; yield it (None: none)."""
    before = os.environ.get("PATH", "")
    with tempfile.TemporaryDirectory(prefix="ffmpeg-") as folder:
        link = link_ffmpeg(Path(folder))
        if link is None:
            yield None
            return
        os.environ["PATH"] = f"{folder}{os.pathsep}{before}"
        try:
            yield link
        finally:
            os.environ["PATH"] = before


@pytest.fixture(scope="session", autouse=True)
def ffmpeg() -> Iterator[Path | None]:
    """Give the whole session HA's converter, as every Home Assistant image has it."""
    with ffmpeg_on_path() as link:
        yield link
