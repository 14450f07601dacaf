"""The engine never imports Home Assistant: proven by importing it where HA cannot load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "custom_components" / "companion_agent" / "engine"

PROBE = """
import importlib, pkgutil, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "homeassistant" or name.startswith("homeassistant."):
            raise ImportError(f"engine imported {name}")
        return None
sys.meta_path.insert(0, Block())
import types
pkg = types.ModuleType("custom_components.companion_agent")
pkg.__path__ = [sys.argv[1]]
sys.modules["custom_components.companion_agent"] = pkg
import custom_components.companion_agent.engine as engine
count = 0
for info in pkgutil.walk_packages(engine.__path__, "custom_components.companion_agent.engine."):
    importlib.import_module(info.name)
    count += 1
print(count)
"""


def test_every_engine_module_imports_without_homeassistant() -> None:
    """Import each engine module with ``homeassistant`` made unimportable."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(ENGINE.parent)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 8


def test_no_engine_source_mentions_homeassistant_imports() -> None:
    """No engine file has an import line for homeassistant, even a lazy one."""
    offenders = [
        str(path.relative_to(ROOT))
        for path in ENGINE.rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip().startswith(("import homeassistant", "from homeassistant"))
    ]
    assert offenders == []
