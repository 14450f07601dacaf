"""The repository's Python scripts (``script/*.py``) loaded as modules, for their tests."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def load_script(name: str) -> ModuleType:
    """Load ``script/<name>.py`` once, registered under ``name``."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "script" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
