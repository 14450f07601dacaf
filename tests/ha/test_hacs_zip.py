"""The HACS release zip: unpacked into a fresh config folder, HA loads and runs it from there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from functools import partial
from pathlib import Path

from homeassistant.core import HomeAssistant

from tests.support.chat_requests import system_text, tool_names
from tests.support.llm_server import LLMServer

ROOT = Path(__file__).resolve().parents[2]
BOOT = Path(__file__).parents[1] / "support" / "ha_boot_program.py"
RUN_TIMEOUT = 60.0


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a command with the venv's python, without PYTHONPATH; blocking."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


def install(tmp_path: Path) -> Path:
    """Build the zip with script/package and unpack it where HACS would; return config dir."""
    archive = tmp_path / "dist" / "companion_agent.zip"
    built = run([str(ROOT / "script" / "package"), "--output", str(archive)], tmp_path)
    assert built.returncode == 0, built.stderr
    config = tmp_path / "config"
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(config / "custom_components" / "companion_agent")
    return config


def inside(path: str, folder: Path) -> bool:
    """Return whether ``path`` lies in ``folder``."""
    return Path(path).resolve().is_relative_to(folder.resolve())


async def test_ha_loads_the_unpacked_zip_with_its_builtin_profiles_and_plugins(
    hass: HomeAssistant, llm_server: LLMServer, tmp_path: Path
) -> None:
    """A separate HA finds the integration only in the unpacked zip, and 宝巧 answers from it."""
    config = await hass.async_add_executor_job(install, tmp_path)
    installed = config / "custom_components" / "companion_agent"
    runner = tmp_path / "runner"
    runner.mkdir()
    shutil.copy(BOOT, runner / "boot.py")

    done = await hass.async_add_executor_job(
        partial(run, ["boot.py", str(config), llm_server.url], runner)
    )

    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert inside(report["integration"], installed)
    assert report["built_in"] is False
    assert report["state"] == "loaded"
    assert "custom_components.companion_agent.engine.turn.runner" in report["modules"]
    assert "companion_agent_plugins.datetime.plugin" in report["modules"]
    outside = {name: path for name, path in report["modules"].items() if not inside(path, config)}
    assert outside == {}
    assert report["profiles"] == {
        profile: str(installed / "profiles" / f"{profile}.toml")
        for profile in ("baoqiao", "butler", "default")
    }
    assert report["plugins"] == {
        plugin: str(installed / "plugins" / plugin)
        for plugin in ("datetime", "diary", "mood_chat", "state_chat", "web_search")
    }
    assert report["persona"] == {
        "profile": str(installed / "profiles" / "baoqiao.toml"),
        "plugins": ["datetime", "diary"],
    }
    assert report["diagnostics"]["problems"] == []

    ask, summarise = llm_server.requests
    assert "你是宝巧" in system_text(ask)
    assert tool_names(ask) == {"get_current_time", "diary_write", "diary_read"}
    assert summarise["messages"][-1]["role"] == "tool"  # type: ignore[index]
    clock = json.loads(summarise["messages"][-1]["content"])  # type: ignore[index]
    assert report["answer"] == f"现在是{clock['time']}。"
