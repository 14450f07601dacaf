"""``script/e2e-browser``: the Assist dialog and the companion's card in headless Chromium.

Uses the running demo (``script/demo``), else brings up a headless one of its own. Then
``frontend/browser/assist-flow.mjs`` (playwright-core on Debian's chromium) signs in,
opens the demo's "Companion" dashboard, sends a message in the Assist dialog, and saves a
screenshot of the streamed reply in the dialog and one of the companion's card, under
``.screenshots/demo/``. Exits non-zero when the reply does not appear.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

from .__main__ import FOLDER, NOTE
from .home import DASHBOARD
from .running import read_note
from .stack import USERNAME, DemoStack, model_from_environment

ROOT = Path(__file__).resolve().parents[1]
FLOW = ROOT / "frontend" / "browser" / "assist-flow.mjs"
SHOTS = ROOT / ".screenshots" / "demo"
SAY = "turn on the kitchen light"
EXPECT = "Kitchen Lights are on"
FLOW_TIMEOUT = 180.0


async def check(url: str, password: str) -> int:
    """Run the browser flow against ``url``; print its summary; return its exit status."""
    node = shutil.which("node")
    if node is None:
        print("e2e-browser: node is missing (install nodejs)", file=sys.stderr)
        return 1
    if SHOTS.exists():
        shutil.rmtree(SHOTS)
    SHOTS.mkdir(parents=True)
    env = {
        **os.environ,
        "HA_URL": url,
        "HA_USER": USERNAME,
        "HA_PASSWORD": password,
        "DASHBOARD": f"/{DASHBOARD}/0",
        "SAY": SAY,
        "EXPECT": EXPECT,
        "SHOTS": str(SHOTS),
        "CHROMIUM": shutil.which("chromium") or "/usr/bin/chromium",
    }
    flow = await asyncio.create_subprocess_exec(
        node, str(FLOW), cwd=FLOW.parent, env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(flow.communicate(), FLOW_TIMEOUT)
    lines = out.decode(errors="replace").strip().splitlines()
    summary = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    print(f"you> {SAY}")
    print(f"Assist dialog> {summary.get('reply', '(no reply appeared)')}")
    print(f"companion card> {summary.get('card_subtitle', '(nothing shown)')}")
    for path in summary.get("screenshots", []):
        print(f"  screenshot: {path}")
    if flow.returncode != 0 or EXPECT not in summary.get("reply", ""):
        print(f"e2e-browser: FAILED: {summary.get('error') or lines[-5:]}", file=sys.stderr)
        return 1
    print("e2e-browser: the reply appeared in the Assist dialog")
    return 0


async def main() -> int:
    """Check the running demo, or a headless one brought up for the check."""
    if (note := read_note(NOTE)) is not None:
        print(f"(through the running demo at {note.url})")
        return await check(note.url, note.password)
    print("(no demo running: starting a headless Home Assistant for the check)")
    stack = DemoStack(headless=True, choice=model_from_environment(), folder=FOLDER / "browser")
    try:
        await stack.up()
        return await check(stack.link.url, stack.password)
    finally:
        await stack.down()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
