"""A browser flow (a Node script driving Debian's Chromium) against a real HA process.

A flow is one ``frontend/browser/*.mjs`` script: it reads what to do from its environment,
saves screenshots into ``SHOTS`` and prints a JSON summary as its last line.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.ha_process import HomeAssistantProcess

CHROMIUM = "/usr/bin/chromium"
NODE = shutil.which("node")


@dataclass(frozen=True, slots=True)
class FlowRun:
    """How a flow ended: its exit code, its summary, and its output's lines."""

    returncode: int | None
    summary: dict[str, Any]
    lines: list[str]


async def create_dashboard(
    home: HomeAssistantProcess, url_path: str, title: str, views: list[dict[str, Any]]
) -> None:
    """Create a storage dashboard at ``url_path`` holding ``views``."""
    await home.ws(
        {
            "type": "lovelace/dashboards/create",
            "url_path": url_path,
            "title": title,
            "mode": "storage",
        },
        {
            "type": "lovelace/config/save",
            "url_path": url_path,
            "config": {"title": title, "views": views},
        },
    )


def _emptied(folder: Path) -> None:
    """Make ``folder`` exist and hold nothing."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)


async def run_flow(
    flow: Path,
    home: HomeAssistantProcess,
    *,
    shots: Path,
    dashboard: str,
    env: dict[str, str],
    within: float,
) -> FlowRun:
    """Run ``flow`` signed in to ``home`` on ``dashboard`` with ``env``; return how it ended.

    ``shots`` is emptied first; the screenshots the flow names are printed. A flow still
    running after ``within`` seconds is killed.
    """
    await asyncio.to_thread(_emptied, shots)
    assert NODE is not None
    process = await asyncio.create_subprocess_exec(
        NODE,
        str(flow),
        cwd=flow.parent,
        env={
            **os.environ,
            "HA_URL": home.url,
            "DASHBOARD": f"/{dashboard}/0",
            "HA_USER": home.username,
            "HA_PASSWORD": home.password,
            "SHOTS": str(shots),
            "CHROMIUM": CHROMIUM,
            **env,
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), within)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    lines = out.decode(errors="replace").strip().splitlines()
    summary = json.loads(lines[-1]) if lines and lines[-1].startswith('{"') else {}
    print("screenshots:", *summary.get("screenshots", []), sep="\n  ")
    return FlowRun(process.returncode, summary, lines)
