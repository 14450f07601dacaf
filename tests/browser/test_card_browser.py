"""The companion card in a real browser: headless Chromium, a real HA process and frontend.

HA runs as its own process (``tests/support/ha_process.py``) with the frontend
(``home-assistant-frontend``), an empty dashboard, and the local scripted model server as
the model. ``frontend/browser/card-flow.mjs`` (Playwright's
``playwright-core`` driving Debian's ``chromium``) signs in on HA's login page, adds the
card through HA's card picker and the card's visual editor, runs a turn
that says a sentence, shows an emotion and holds an unlock, approves it on the card, and
forgets a household memory from it.
The screenshots are saved under ``.screenshots/card/`` and named in the output.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.browser_flow import create_dashboard, run_flow
from tests.support.front_door import FRONT_DOOR_YAML
from tests.support.ha_process import HomeAssistantProcess
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

ROOT = Path(__file__).resolve().parents[2]
FLOW = ROOT / "frontend" / "browser" / "card-flow.mjs"
SHOTS = ROOT / ".screenshots" / "card"
FLOW_TIMEOUT = 90.0
SENTENCE = "Shall I unlock it for you?"
CARD_PROFILE = """
name = "Juniper"
language = "en"
persona = "You are Juniper, the home's companion."
[output]
actions = ["joy", "surprise", "think", "wave"]
[policy]
"lock" = "confirm"
"""
DASHBOARD = "companion-card"
MEMORY = "The bins go out on Tuesday evening."
UNLOCK = '{"name": "Front Door", "domain": ["lock"]}'

# script/setup installs all it needs (node packages, Debian's chromium, HA's frontend): a
# machine without them fails here rather than skipping, so the check can never pass unrun.
pytestmark = pytest.mark.browser


@pytest.fixture
async def home(tmp_path: Path, socket_enabled: None) -> AsyncIterator[HomeAssistantProcess]:
    """Start a real HA process with the front door and the card profile."""
    profiles = tmp_path / "ha" / "companion_agent" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "card.toml").write_text(CARD_PROFILE)
    async with await HomeAssistantProcess.start(tmp_path / "ha", extra_yaml=FRONT_DOOR_YAML) as ha:
        yield ha


async def test_the_card_shows_a_turn_and_approves_a_held_unlock(
    home: HomeAssistantProcess, llm_server: LLMServer
) -> None:
    """Subtitle, face change and held unlock appear on the card; Enter on Approve unlocks."""
    persona = await home.configure_companion(llm_server.url, profile="card")
    await home.expose("lock.front_door")
    await create_dashboard(home, DASHBOARD, "Companion", [{"title": "Juniper", "cards": []}])
    await home.rest(
        "POST",
        "/api/services/companion_agent/remember",
        {"persona": persona, "text": MEMORY, "topic": "bins"},
    )
    llm_server.script(
        Reply.tool_calls(("call_unlock", "HassTurnOff", UNLOCK)),
        Reply.text(f"[surprise] Oh, the front door? [think] {SENTENCE}", delay=0.05),
    )
    env = {"PERSONA": persona, "EXPECT_SENTENCE": SENTENCE, "EXPECT_MEMORY": MEMORY}
    run = await run_flow(FLOW, home, shots=SHOTS, dashboard=DASHBOARD, env=env, within=FLOW_TIMEOUT)
    summary = run.summary
    assert run.returncode == 0, f"{summary.get('error') or run.lines[-20:]}\n{home.output(2000)}"
    assert summary["subtitle"] == SENTENCE
    assert (summary["emotion_before"], summary["emotion_after"]) == ("neutral", "think")
    assert "Front Door" in summary["held"]
    assert await home.state("lock.front_door") == "unlocked"
    assert summary["card_added"] is True
    assert summary["turn"] == "done"
    assert summary["forgotten"] == MEMORY
