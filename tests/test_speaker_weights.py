"""script/speaker-weights' reader of legacy torch files: tensors read, anything else refused.

The test writes small files in the legacy (pre-zip) format itself, with stand-in ``torch``
modules so ``pickle`` names the same globals torch does, then reads them without torch.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.support.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def speaker_weights() -> ModuleType:
    """Return ``script/speaker_weights.py`` as a module."""
    return load_script("speaker_weights")


class FloatStorage:
    """Stands in for torch.FloatStorage: a flat float32 buffer with a key."""

    def __init__(self, key: str, data: np.ndarray[Any, Any]) -> None:
        """Hold ``data`` under ``key``."""
        self.key = key
        self.data = data.astype("<f4").reshape(-1)


def _rebuild_tensor_v2(*args: object) -> None:
    """Stands in for torch._utils._rebuild_tensor_v2 (never called: only named)."""


class Tensor:
    """A tensor to pickle: a view into a storage, pickled as torch pickles one."""

    def __init__(self, storage: FloatStorage, shape: tuple[int, ...]) -> None:
        """View all of ``storage`` as ``shape`` (row-major)."""
        self.storage = storage
        self.shape = shape

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle as torch does: rebuild from storage, offset, size, stride."""
        strides = tuple(int(np.prod(self.shape[i + 1 :])) for i in range(len(self.shape)))
        return (
            _rebuild_tensor_v2,
            (self.storage, 0, self.shape, strides, False, collections.OrderedDict()),
        )


class Evil:
    """An object whose unpickling would run a shell command (touching ``marker``)."""

    def __init__(self, marker: Path) -> None:
        """Remember the file the command would make."""
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        """Ask the reader to call os.system."""
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make ``torch.FloatStorage`` and ``torch._utils._rebuild_tensor_v2`` name our stand-ins."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    FloatStorage.__module__ = "torch"
    _rebuild_tensor_v2.__module__ = "torch._utils"
    torch.FloatStorage = FloatStorage  # type: ignore[attr-defined]
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2  # type: ignore[attr-defined]
    torch._utils = utils  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._utils", utils)
    yield
    FloatStorage.__module__ = __name__
    _rebuild_tensor_v2.__module__ = __name__


def legacy_file(root: object, storages: list[FloatStorage]) -> bytes:
    """Return ``root`` saved in torch's legacy format, its storages after the pickle."""
    out = io.BytesIO()
    for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
        pickle.dump(header, out, protocol=2)

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj: object) -> object:
            if isinstance(obj, FloatStorage):
                return ("storage", FloatStorage, obj.key, "cpu", obj.data.size, None)
            return None

    Pickler(out, protocol=2).dump(root)
    pickle.dump([s.key for s in storages], out, protocol=2)
    for storage in storages:
        out.write(struct.pack("<q", storage.data.size))
        out.write(storage.data.tobytes())
    return out.getvalue()


@pytest.mark.usefixtures("fake_torch")
def test_a_legacy_checkpoints_tensors_are_read_without_torch() -> None:
    """The model_state's tensors come back with their shapes and values, by dotted name."""
    weight = np.arange(12, dtype=np.float32).reshape(3, 4)
    bias = np.array([0.5, -1.5, 2.0], np.float32)
    storages = [FloatStorage("0", weight), FloatStorage("1", bias)]
    state = collections.OrderedDict(
        [("linear.weight", Tensor(storages[0], (3, 4))), ("linear.bias", Tensor(storages[1], (3,)))]
    )
    data = legacy_file({"step": 7, "model_state": state}, storages)
    tensors = speaker_weights().read_legacy(data)
    assert set(tensors) == {"linear.weight", "linear.bias"}
    assert np.array_equal(tensors["linear.weight"], weight)
    assert np.array_equal(tensors["linear.bias"], bias)


@pytest.mark.usefixtures("fake_torch")
def test_a_global_that_is_no_tensor_is_refused_before_it_runs(tmp_path: Path) -> None:
    """A pickle naming os.system is refused: the command never runs."""
    storages = [FloatStorage("0", np.zeros(2, np.float32))]
    marker = tmp_path / "ran"
    evil = Evil(marker)
    data = legacy_file({"model_state": {"x": Tensor(storages[0], (2,)), "y": evil}}, storages)
    module = speaker_weights()
    with pytest.raises(module.RefusedPickleError, match=r"refusing .*system"):
        module.read_legacy(data)
    assert not marker.exists()


@pytest.mark.usefixtures("fake_torch")
def test_a_file_that_is_no_legacy_checkpoint_is_refused() -> None:
    """No magic number, no pickle, a tensor past its storage: a ValueError, nothing read."""
    module = speaker_weights()
    with pytest.raises(ValueError, match="magic"):
        module.read_legacy(pickle.dumps(42, protocol=2) * 3)
    with pytest.raises(ValueError, match="not a legacy torch file"):
        module.read_legacy(b"PK\x03\x04 not a pickle at all")
    storages = [FloatStorage("0", np.zeros(2, np.float32))]
    data = legacy_file({"model_state": {"x": Tensor(storages[0], (5,))}}, storages)
    with pytest.raises(ValueError, match="runs out of its storage"):
        module.read_legacy(data)
