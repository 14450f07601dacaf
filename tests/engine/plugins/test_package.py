"""script/package: the HACS zip carries plugins/ and profiles/ inside the integration folder."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from custom_components.companion_agent.engine.plugins import builtin_roots, load_library

ROOT = Path(__file__).resolve().parents[3]


def build(tmp_path: Path) -> Path:
    """Run the package script into ``tmp_path`` and return the zip."""
    output = tmp_path / "companion_agent.zip"
    result = subprocess.run(
        [sys.executable, str(ROOT / "script" / "package"), "--output", str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return output


def test_zip_root_is_the_integration_folder_with_plugins_and_profiles(tmp_path: Path) -> None:
    """Names are relative to custom_components/companion_agent; no caches ship."""
    with zipfile.ZipFile(build(tmp_path)) as archive:
        names = set(archive.namelist())
    assert "engine/plugins/loader.py" in names
    assert "engine/turn/prompt.py" in names
    for plugin in ("datetime", "diary", "web_search"):
        assert f"plugins/{plugin}/plugin.toml" in names
        assert f"plugins/{plugin}/plugin.py" in names
    for profile in ("default", "baoqiao", "butler"):
        assert f"profiles/{profile}.toml" in names
    assert not any(name.startswith("custom_components/") for name in names)
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)


def test_the_installed_copy_finds_its_builtin_plugins_and_profiles(tmp_path: Path) -> None:
    """Unpacked where HACS puts it, the engine finds and loads the shipped content there."""
    installed = tmp_path / "config" / "custom_components" / "companion_agent"
    with zipfile.ZipFile(build(tmp_path)) as archive:
        archive.extractall(installed)
    assert builtin_roots(installed) == (installed,)
    library = load_library(builtin_roots(installed))
    assert library.problems == ()
    assert {"datetime", "diary", "web_search"} <= set(library.catalog.plugins)
    assert library.catalog.plugins["diary"].manifest.folder == installed / "plugins" / "diary"
    profile = library.profiles.get("baoqiao")
    assert profile is not None
    assert profile.source == installed / "profiles" / "baoqiao.toml"


def test_a_bare_integration_folder_has_no_builtin_roots(tmp_path: Path) -> None:
    """Outside the repo and without shipped content there is nothing to find."""
    bare = tmp_path / "config" / "custom_components" / "companion_agent"
    bare.mkdir(parents=True)
    assert builtin_roots(bare) == ()
