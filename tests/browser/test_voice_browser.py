"""Voice enrolment recorded in a real browser: Chromium's fake microphone, a real HA process.

HA runs as its own process (``tests/support/ha_process.py``) with the frontend and a
dashboard holding the companion card. ``frontend/browser/voice-flow.mjs`` starts Debian's
``chromium`` with a fake microphone that plays festival's speech (a woman, slt) from a WAV,
signs in as the owner, and records the card's four phrases. HA then holds the owner's
voiceprint, an adult's (the owner is an administrator), in the entry's voiceprints file.
The screenshots are saved under ``.screenshots/voice/`` and named in the output.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.browser_flow import create_dashboard, run_flow
from tests.support.festival import festival_say, write_wav
from tests.support.ha_process import HomeAssistantProcess
from tests.support.llm_server import LLMServer

ROOT = Path(__file__).resolve().parents[2]
FLOW = ROOT / "frontend" / "browser" / "voice-flow.mjs"
SHOTS = ROOT / ".screenshots" / "voice"
FLOW_TIMEOUT = 120.0
DASHBOARD = "companion-voice"
SPEECH = (
    "Please turn on the lights in the kitchen. What is the weather going to be like "
    "tomorrow morning? Remind me to water the plants on Sunday evening."
)

pytestmark = pytest.mark.browser


@pytest.fixture
async def home(tmp_path: Path, socket_enabled: None) -> AsyncIterator[HomeAssistantProcess]:
    """Start a real HA process with people (the owner's person is made at onboarding)."""
    async with await HomeAssistantProcess.start(tmp_path / "ha", extra_yaml="person:\n") as ha:
        yield ha


async def test_the_card_records_four_phrases_and_ha_learns_the_owners_voice(
    home: HomeAssistantProcess, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Four phrases recorded through the fake microphone enrol the owner, as an adult."""
    persona = await home.configure_companion(llm_server.url)
    cards = [{"type": "custom:companion-card", "entity": persona}]
    await create_dashboard(home, DASHBOARD, "Voice", [{"cards": cards}])
    speech = write_wav(tmp_path / "speech.wav", festival_say(SPEECH, "slt"))
    env = {"SPEECH_WAV": str(speech)}
    run = await run_flow(FLOW, home, shots=SHOTS, dashboard=DASHBOARD, env=env, within=FLOW_TIMEOUT)
    summary = run.summary
    assert run.returncode == 0, f"{summary.get('error') or run.lines[-20:]}\n{home.output(2000)}"
    assert summary["phrases"][0] == "Please turn on the lights in the kitchen."
    assert len(summary["phrases"]) == 4
    assert summary["answer"] == "Learned from 4 recordings", summary["clips"]

    [entry] = [
        e
        for e in await home.rest("GET", "/api/config/config_entries/entry")
        if e["domain"] == "companion_agent"
    ]
    [users] = await home.ws({"type": "config/auth/list"})
    owner = next(u for u in users if u["is_owner"])
    saved = home.folder / "companion_agent" / f"{entry['entry_id']}.voiceprints.json"
    voices = json.loads(await asyncio.to_thread(saved.read_text, "utf-8"))["voices"]
    assert [(v["user_id"], v["role"], len(v["samples"])) for v in voices] == [
        (owner["id"], "adult", 4)
    ]
