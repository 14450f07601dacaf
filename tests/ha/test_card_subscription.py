"""``companion_agent/subscribe`` through a real HA: auth, scope per user, bounds, no prompts."""

from __future__ import annotations

import base64
import json

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    WebSocketGenerator,
)

from custom_components.companion_agent.const import DOMAIN
from custom_components.companion_agent.frontend.events import TurnStarted
from custom_components.companion_agent.frontend.hub import MAX_QUEUED, async_publish
from tests.ha.common import SetupCompanion, ask, call
from tests.ha.common.card import (
    CARD_PROFILE,
    PROMPT_MARKERS,
    Card,
    card_house,
    user_token,
    write_face,
)
from tests.ha.common.house import UNLOCK
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

pytestmark = pytest.mark.usefixtures("demo_lock")


@pytest.fixture
async def agent(hass: HomeAssistant, setup_companion: SetupCompanion) -> str:
    """Set up the demo lock and the card profile's persona; return its agent."""
    _entry, agent_id = await card_house(hass, setup_companion)
    return agent_id


def persona_id(hass: HomeAssistant, entity_id: str) -> str:
    """Return the persona subentry behind a conversation entity."""
    entry = er.async_get(hass).async_get(entity_id)
    assert entry is not None
    assert entry.config_subentry_id is not None
    return entry.config_subentry_id


async def test_a_connection_without_a_valid_token_cannot_subscribe(
    hass: HomeAssistant, agent: str, hass_client_no_auth: ClientSessionGenerator
) -> None:
    """HA's WebSocket refuses the command before auth: the subscription needs a user."""
    assert await async_setup_component(hass, "websocket_api", {})
    client = await hass_client_no_auth()
    async with client.ws_connect("/api/websocket") as ws:
        assert (await ws.receive_json())["type"] == "auth_required"
        await ws.send_json({"id": 1, "type": "companion_agent/subscribe", "entity_id": agent})
        reply = await ws.receive_json()
        assert reply["type"] == "auth_invalid"


async def test_an_unknown_persona_is_not_found(
    hass: HomeAssistant, agent: str, hass_ws_client: WebSocketGenerator
) -> None:
    """Anything but a loaded persona's conversation entity is refused."""
    client = await hass_ws_client(hass)
    for entity_id in ("conversation.nobody", "lock.front_door"):
        await client.send_json_auto_id(
            {"type": "companion_agent/subscribe", "entity_id": entity_id}
        )
        reply = await client.receive_json()
        assert reply["success"] is False
        assert reply["error"]["code"] == "not_found"


async def test_a_turn_reaches_the_card_as_typed_events_without_a_prompt(
    hass: HomeAssistant, agent: str, llm_server: LLMServer, hass_ws_client: WebSocketGenerator
) -> None:
    """Snapshot, then turn start, each sentence with its emotion and gesture, and the end."""
    card = await Card.open(hass, hass_ws_client, agent)
    snapshot = card.of("snapshot")[0]
    assert snapshot["persona"]["emotions"] == ["joy", "surprise", "think"]
    assert snapshot["persona"]["gestures"] == ["wave"]
    assert snapshot["persona"]["name"] == "Companion"
    assert snapshot["emotion"] == "neutral"
    llm_server.script(Reply.text("[joy] Hello there! [wave] Nice to see you."))
    await ask(hass, agent, "Hi")
    await card.until("turn_ended")
    assert card.kinds()[2:] == ["turn_started", "sentence", "emotion", "sentence", "turn_ended"]
    first, second = card.of("sentence")
    assert (first["text"], first["emotion"], first["timing"]) == ("Hello there!", "joy", "written")
    assert (second["text"], second["gestures"]) == ("Nice to see you.", ["wave"])
    assert card.of("emotion")[0]["emotion"] == "joy"
    assert card.of("turn_ended")[0]["outcome"] == "complete"
    await card.drain()
    wire = json.dumps(card.messages)
    assert not [marker for marker in PROMPT_MARKERS if marker in wire]
    assert "Hi" not in [m.get("text") for m in card.messages]  # what the person said stays out


async def test_a_non_admin_sees_only_their_own_held_action_and_the_households_memories(
    hass: HomeAssistant, agent: str, llm_server: LLMServer, hass_ws_client: WebSocketGenerator
) -> None:
    """Anna's unlock reaches Anna's card only; memories are the household's, never a person's."""
    anna, anna_token = await user_token(hass, "Anna")
    _ben, ben_token = await user_token(hass, "Ben")
    _admin, admin_token = await user_token(hass, "Root", admin=True)
    hass.states.async_set("person.anna", "home", {"user_id": anna})
    await call(
        hass, "remember", {"persona": agent, "text": "Bins go out on Tuesday", "topic": "bins"}
    )
    await call(
        hass,
        "remember",
        {"persona": agent, "person": "person.anna", "text": "Anna's PIN is 4711", "topic": "pin"},
    )
    cards = {
        name: await Card.open(hass, hass_ws_client, agent, token)
        for name, token in (("anna", anna_token), ("ben", ben_token), ("admin", admin_token))
    }
    for card in cards.values():
        [memories] = card.of("memories")
        assert [m["text"] for m in memories["items"]] == ["Bins go out on Tuesday"]

    llm_server.script(
        Reply.tool_calls(("call_unlock", "HassTurnOff", UNLOCK)),
        Reply.text("[think] Should I unlock the front door?"),
    )
    await ask(hass, agent, "Unlock the front door", user_id=anna)
    held = await cards["anna"].until("confirmation", status="requested")
    assert held["action"]["targets"][0]["entity_id"] == "lock.front_door"
    assert held["needs_adult"] is False  # no adult's voice is enrolled
    await cards["anna"].until("turn_ended")
    for name in ("ben", "admin"):
        await cards[name].drain()
        assert cards[name].kinds() == ["snapshot", "memories"], name  # not Anna's turn

    await hass.services.async_call(
        DOMAIN,
        "confirm_action",
        {"token": held["token"], "approve": True},
        blocking=True,
        context=Context(user_id=anna),
    )
    done = await cards["anna"].until("confirmation", status="executed")
    assert "token" not in done
    assert done["id"] == held["id"]
    assert hass.states.get("lock.front_door").state == "unlocked"  # type: ignore[union-attr]
    assert not cards["ben"].of("confirmation")
    again = await Card.open(hass, hass_ws_client, agent, ben_token)
    assert again.of("snapshot")[0]["confirmations"] == []


async def test_a_household_held_action_goes_to_administrators_only(
    hass: HomeAssistant, agent: str, llm_server: LLMServer, hass_ws_client: WebSocketGenerator
) -> None:
    """A satellite's unlock with nobody signed in: admins may approve it, so they see it."""
    _ben, ben_token = await user_token(hass, "Ben")
    _root, admin_token = await user_token(hass, "Root", admin=True)
    ben = await Card.open(hass, hass_ws_client, agent, ben_token)
    admin = await Card.open(hass, hass_ws_client, agent, admin_token)
    llm_server.script(
        Reply.tool_calls(("call_unlock", "HassTurnOff", UNLOCK)),
        Reply.text("Should I unlock the front door?"),
    )
    await ask(hass, agent, "Unlock the front door")
    held = await admin.until("confirmation", status="requested")
    assert held["token"]
    await ben.until("turn_ended")  # the household's turn itself is everyone's
    assert not ben.of("confirmation")
    late = await Card.open(hass, hass_ws_client, agent, admin_token)
    assert [c["id"] for c in late.of("snapshot")[0]["confirmations"]] == [held["id"]]


async def test_a_flood_is_bounded_and_the_card_is_told_what_it_missed(
    hass: HomeAssistant, agent: str, hass_ws_client: WebSocketGenerator
) -> None:
    """Far more events than the queue holds, at once: the newest arrive, the rest are counted."""
    card = await Card.open(hass, hass_ws_client, agent)
    persona = persona_id(hass, agent)
    for n in range(MAX_QUEUED * 4):
        async_publish(hass, TurnStarted(persona_id=persona, user_id=None, trace_id=f"t{n}"))
    await card.until("turn_started", trace_id=f"t{MAX_QUEUED * 4 - 1}")
    started = card.of("turn_started")
    assert len(started) == MAX_QUEUED
    assert started[0]["trace_id"] == f"t{MAX_QUEUED * 3}"
    assert card.of("dropped") == [{"kind": "dropped", "count": MAX_QUEUED * 3}]


async def test_memories_are_sent_again_when_changed_by_hand(
    hass: HomeAssistant, agent: str, hass_ws_client: WebSocketGenerator
) -> None:
    """Forgetting from the card (the forget action by id) updates every card's list."""
    user, token = await user_token(hass, "Cleo")
    await call(
        hass, "remember", {"persona": agent, "text": "The cat is called Miso", "topic": "cat"}
    )
    card = await Card.open(hass, hass_ws_client, agent, token)
    [item] = card.of("memories")[0]["items"]
    await hass.services.async_call(
        DOMAIN, "forget", {"id": item["id"]}, blocking=True, context=Context(user_id=user)
    )
    update = await card.until("memories")
    assert update["items"] == []


async def test_a_profile_face_image_reaches_the_card_as_a_data_url(
    hass: HomeAssistant, setup_companion: SetupCompanion, hass_ws_client: WebSocketGenerator
) -> None:
    """``[face] joy = ...`` in the profile: the snapshot carries the image, no URL to fetch."""
    image = b'<svg xmlns="http://www.w3.org/2000/svg"/>'
    write_face(hass, "joy.svg", image)
    profile = CARD_PROFILE.replace("[policy]", '[face]\n    joy = "faces/joy.svg"\n    [policy]')
    _entry, agent = await card_house(hass, setup_companion, profile)
    card = await Card.open(hass, hass_ws_client, agent)
    faces = card.of("snapshot")[0]["persona"]["faces"]
    assert faces == {"joy": "data:image/svg+xml;base64," + base64.b64encode(image).decode()}
