"""``[face]`` in a profile: images per emotion tag, read beside the profile, checked by key."""

from __future__ import annotations

from pathlib import Path

import pytest

from custom_components.companion_agent.engine.plugins import load_library
from custom_components.companion_agent.engine.plugins.profiles import MAX_FACE_BYTES

from .samples import write_profile

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle r="5"/></svg>'
HEAD = 'name = "Faces"\n[output]\nactions = ["joy", "wave"]\n'


def test_face_images_are_read_with_their_media_type(tmp_path: Path) -> None:
    """Each emotion's image is read once at load, by its file's kind."""
    folder = tmp_path / "profiles" / "faces"
    folder.mkdir(parents=True)
    (folder / "joy.svg").write_bytes(SVG)
    (folder / "calm.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    write_profile(
        tmp_path, "faces", HEAD + '[face]\njoy = "faces/joy.svg"\nneutral = "faces/calm.png"\n'
    )
    library = load_library([tmp_path])
    assert library.problems == ()
    faces = library.profiles.profiles["faces"].faces
    assert (faces["joy"].media_type, faces["joy"].data) == ("image/svg+xml", SVG)
    assert faces["neutral"].media_type == "image/png"


@pytest.mark.parametrize(
    ("line", "key", "words"),
    [
        ('sad = "faces/joy.svg"', "face.sad", "not one of output.actions"),
        ('joy = "../../secret.svg"', "face.joy", "in the profile's folder"),
        ('joy = "faces/joy.exe"', "face.joy", "expected one of .svg"),
        ('joy = "faces/missing.png"', "face.joy", "cannot read faces/missing.png"),
        ('joy = "faces/big.png"', "face.joy", f"at most {MAX_FACE_BYTES}"),
        ('"not a tag" = "faces/joy.svg"', "face.not a tag", "not a valid tag"),
    ],
)
def test_a_bad_face_names_the_file_and_key(tmp_path: Path, line: str, key: str, words: str) -> None:
    """A wrong tag, a path outside the folder, a kind, a missing or huge file: one problem."""
    folder = tmp_path / "profiles" / "faces"
    folder.mkdir(parents=True)
    (folder / "joy.svg").write_bytes(SVG)
    (folder / "joy.exe").write_bytes(SVG)
    (folder / "big.png").write_bytes(bytes(MAX_FACE_BYTES + 1))
    (tmp_path / "secret.svg").write_bytes(SVG)
    bad = write_profile(tmp_path, "faces", HEAD + f"[face]\n{line}\n")
    library = load_library([tmp_path])
    [problem] = library.problems
    assert (problem.path, problem.key) == (bad, key)
    assert words in problem.message
    assert "faces" not in library.profiles.profiles
