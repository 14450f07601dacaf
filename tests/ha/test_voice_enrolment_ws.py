"""``companion_agent/voice/enrol`` and ``/voice/forget`` through a real HA: the card's own voice.

The clips are festival's speech (a woman, slt), base64 of 16 kHz PCM as the card sends it;
the speaker encoder is the one shipped; the connection's user is HA's test admin or its
read-only (non-admin) user.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from homeassistant.auth.models import User
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from custom_components.companion_agent.const import STORAGE_FOLDER
from custom_components.companion_agent.frontend.voice_enrolment import MAX_CLIP_BYTES
from custom_components.companion_agent.voice.voiceprints import VOICEPRINTS_FILE
from tests.ha.common import SetupCompanion, persona
from tests.support.festival import festival_say

PHRASES = (
    "Good morning, what is on the calendar today?",
    "Please turn off the lights in the living room.",
    "Remind me to take the bins out tonight.",
    "What will the weather be like this afternoon?",
)


@pytest.fixture(scope="module")
def clips() -> list[str]:
    """Return the four phrases spoken by slt, as the card sends them."""
    return [base64.b64encode(festival_say(text, "slt")).decode() for text in PHRASES]


@pytest.fixture
async def entry(hass: HomeAssistant, setup_companion: SetupCompanion) -> MockConfigEntry:
    """Set up the companion with one persona."""
    return await setup_companion(persona())


def link_person(hass: HomeAssistant, user: User, slug: str) -> None:
    """Give ``user`` a person entity, as HA's person integration would."""
    hass.states.async_set(f"person.{slug}", "home", {"user_id": user.id, "friendly_name": slug})


def enrolled(entry: MockConfigEntry) -> dict[str, tuple[str, int]]:
    """Return each enrolled user's role and sample count."""
    return {v.user_id: (v.role, v.samples) for v in entry.runtime_data.voices.voices()}


async def ask(
    hass: HomeAssistant, ws: WebSocketGenerator, message: dict[str, object], token: str | None
) -> dict[str, object]:
    """Send one command on a new connection (as ``token``'s user) and return its reply."""
    client = await ws(hass, access_token=token) if token else await ws(hass)
    await client.send_json_auto_id(message)
    reply: dict[str, object] = await client.receive_json()
    return reply


async def test_a_user_who_is_not_an_administrator_enrols_their_voice_as_a_child(
    hass: HomeAssistant,
    *,
    entry: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_read_only_user: User,
    hass_read_only_access_token: str,
    clips: list[str],
) -> None:
    """Four spoken clips and one of silence: four samples, the silence skipped, a child's."""
    link_person(hass, hass_read_only_user, "ada")
    silence = base64.b64encode(b"\0\0" * 16000 * 2).decode()
    reply = await ask(
        hass,
        hass_ws_client,
        {"type": "companion_agent/voice/enrol", "clips": [*clips, silence]},
        hass_read_only_access_token,
    )
    assert reply["success"] is True, reply
    assert reply["result"] == {"samples": 4, "skipped": ["recording 5"]}
    assert enrolled(entry) == {hass_read_only_user.id: ("child", 4)}
    saved = Path(hass.config.path(STORAGE_FOLDER, f"{entry.entry_id}.{VOICEPRINTS_FILE}"))
    text = await hass.async_add_executor_job(saved.read_text, "utf-8")
    assert hass_read_only_user.id in text


async def test_an_administrator_enrols_their_own_voice_as_an_adult_and_forgets_it(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_admin_user: User,
    clips: list[str],
) -> None:
    """The admin's own voice is an adult's, and grows with a second enrolment (the answer
    counts that one's clips); forget removes it, and says so once."""
    link_person(hass, hass_admin_user, "admin")
    for part in (clips[:2], clips[2:3]):
        reply = await ask(
            hass, hass_ws_client, {"type": "companion_agent/voice/enrol", "clips": part}, None
        )
        assert reply["success"] is True, reply
        assert reply["result"] == {"samples": len(part), "skipped": []}
    assert enrolled(entry) == {hass_admin_user.id: ("adult", 3)}
    answers = [
        await ask(hass, hass_ws_client, {"type": "companion_agent/voice/forget"}, None)
        for _ in range(2)
    ]
    assert [a["result"] for a in answers] == [{"removed": True}, {"removed": False}]
    assert enrolled(entry) == {}


async def test_what_is_not_usable_is_refused_and_nothing_is_enrolled(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    hass_admin_user: User,
    clips: list[str],
) -> None:
    """Garbage, odd bytes, too long, too many, none, silence only, and no person: each a code."""
    long_clip = base64.b64encode(b"\0\0" * (MAX_CLIP_BYTES // 2 + 1)).decode()
    cases: dict[str, list[object]] = {
        "invalid_format": [
            ["not base64 at all!"],
            [base64.b64encode(b"\x01\x02\x03").decode()],
            [long_clip],
            clips * 2,
            [],
            [42],
        ],
        "no_speech": [[base64.b64encode(b"\0\0" * 32000).decode()]],
    }
    link_person(hass, hass_admin_user, "admin")
    for code, attempts in cases.items():
        for attempt in attempts:
            reply = await ask(
                hass,
                hass_ws_client,
                {"type": "companion_agent/voice/enrol", "clips": attempt},
                None,
            )
            assert reply["success"] is False, json.dumps(reply)[:200]
            error = reply["error"]
            assert isinstance(error, dict)
            assert error["code"] == code, (code, error)
    hass.states.async_remove("person.admin")
    reply = await ask(
        hass, hass_ws_client, {"type": "companion_agent/voice/enrol", "clips": clips[:1]}, None
    )
    error = reply["error"]
    assert isinstance(error, dict)
    assert error["code"] == "person_without_user"
    assert enrolled(entry) == {}
