"""``companion_agent.start_chat`` through a real HA: real satellites, a real media player, piper.

The devices are real HA entities in a test platform (``tests/ha/speakers.py``) that read the
TTS stream behind the URL they are given; the voice is the real wyoming-piper behind a proxy
that records each sentence; the model is the scripted local server.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from homeassistant.components import conversation
from homeassistant.components.assist_pipeline.pipeline import (
    async_get_pipeline,
    async_update_pipeline,
)
from homeassistant.components.assist_satellite import AssistSatelliteEntityFeature
from homeassistant.components.assist_satellite.entity import AssistSatelliteState
from homeassistant.const import CONF_API_KEY, CONF_HOST, CONF_PORT
from homeassistant.core import Context, Event, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_LANGUAGES,
    CONF_MODEL,
    CONF_PROFILE,
    CONF_VOICE,
    DOMAIN,
    EVENT_SPOKE,
    SUBENTRY_CONVERSATION,
    SUBENTRY_TTS,
)
from custom_components.companion_agent.playback import FALLBACK_MARGIN, spoken_seconds
from tests.ha.personakit import agents_by_title, messages, speech, user_text, write_profile
from tests.ha.speakers import SpeakerPlayer, SpeakingSatellite, setup_speakers
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer
from tests.support.piper import piper, piper_process, proxy
from tests.support.wyoming_proxy import WyomingProxy

__all__ = ["piper", "piper_process", "proxy"]  # fixtures, imported to be found

TIMEOUT = 20.0
CONVERSE = AssistSatelliteEntityFeature.ANNOUNCE | AssistSatelliteEntityFeature.START_CONVERSATION
KITCHEN = "assist_satellite.kitchen"
HALL = "assist_satellite.hall"
LOUNGE = "media_player.lounge"
ATTIC = "media_player.attic"
VOICE = "en_US-joe-medium"
BLUEPRINT = (
    Path(__file__).resolve().parents[2]
    / "blueprints"
    / "automation"
    / "companion_agent"
    / "proactive_chat.yaml"
)


@pytest.fixture
async def devices(hass: HomeAssistant) -> dict[str, SpeakingSatellite | SpeakerPlayer]:
    """Load a conversing satellite, an announcing one, a media player and a silent one."""
    hass.config.internal_url = "http://homeassistant.test:8123"
    assert await async_setup_component(hass, "assist_pipeline", {})
    found: dict[str, SpeakingSatellite | SpeakerPlayer] = {
        KITCHEN: SpeakingSatellite("kitchen", CONVERSE),
        HALL: SpeakingSatellite("hall", AssistSatelliteEntityFeature.ANNOUNCE),
        LOUNGE: SpeakerPlayer("lounge"),
        ATTIC: SpeakerPlayer("attic", reports_state=False),
    }
    satellites = [d for d in found.values() if isinstance(d, SpeakingSatellite)]
    players = [d for d in found.values() if isinstance(d, SpeakerPlayer)]
    await setup_speakers(hass, satellites, players)
    return found


async def setup_companion(
    hass: HomeAssistant, server: LLMServer, proxy: WyomingProxy, profile: str = "default"
) -> tuple[MockConfigEntry, str]:
    """Set up one persona and a piper voice; the Assist pipeline talks to the persona."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="test-model",
        data={CONF_BASE_URL: server.url, CONF_API_KEY: "", CONF_MODEL: "test-model"},
        subentries_data=[
            {
                "subentry_type": SUBENTRY_CONVERSATION,
                "data": {CONF_PROFILE: profile},
                "title": "Companion",
                "unique_id": None,
            },
            {
                "subentry_type": SUBENTRY_TTS,
                "data": {
                    CONF_HOST: proxy.host,
                    CONF_PORT: proxy.port,
                    CONF_VOICE: VOICE,
                    CONF_LANGUAGES: ["en_US"],
                },
                "title": VOICE,
                "unique_id": None,
            },
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    agent = agents_by_title(hass, entry)["Companion"]
    await async_update_pipeline(hass, async_get_pipeline(hass), conversation_engine=agent)
    return entry, agent


def spoke_events(hass: HomeAssistant) -> list[Event]:
    """Collect every companion_agent_spoke event from now on."""
    events: list[Event] = []
    hass.bus.async_listen(EVENT_SPOKE, events.append)
    return events


async def start_chat(hass: HomeAssistant, **data: object) -> list[dict[str, object]]:
    """Call start_chat and return what each target heard."""
    response = await asyncio.wait_for(
        hass.services.async_call(
            DOMAIN, "start_chat", dict(data), blocking=True, return_response=True
        ),
        TIMEOUT,
    )
    assert response is not None
    chats = response["chats"]
    assert isinstance(chats, list)
    return [dict(chat) for chat in chats if isinstance(chat, dict)]


def assistant_text(turn: dict[str, object]) -> str:
    """Return what a stored turn's assistant messages say."""
    rows = turn["messages"]
    assert isinstance(rows, list)
    return "".join(str(row["content"]) for row in rows if row["role"] == "assistant")


def stored_turns(hass: HomeAssistant) -> list[dict[str, object]]:
    """Return every stored turn of every persona, read from disk."""
    folder = Path(hass.config.path(DOMAIN)) / "conversations"
    turns: list[dict[str, object]] = []
    for path in folder.rglob("*.json"):
        turns.extend(json.loads(path.read_text("utf-8"))["turns"])
    return turns


async def test_a_satellite_starts_a_conversation_and_hears_it_before_the_model_finishes(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """start_conversation with a streaming URL: the first audio plays while the rest is held."""
    entry, agent = await setup_companion(hass, llm_server, proxy)
    kitchen = devices[KITCHEN]
    rest = asyncio.Event()
    held_at_first_audio: list[bool] = []

    async def note_first_audio() -> None:
        """Note whether the model still held the rest back when the first audio came."""
        await kitchen.heard.first_audio.wait()
        held_at_first_audio.append(not rest.is_set())
        rest.set()

    watcher = hass.async_create_task(note_first_audio())
    llm_server.script(
        Reply(
            chunks=(TextChunk("Good evening! The"), TextChunk(" stars are out tonight.", hold=rest))
        )
    )
    events = spoke_events(hass)

    (chat,) = await start_chat(
        hass, targets=[KITCHEN], instruction="Tell them the stars are out.", persona=agent
    )
    await watcher
    await hass.async_block_till_done()

    assert held_at_first_audio == [True]
    assert kitchen.heard.log == ["start_conversation", "first audio", "audio ended"]
    assert proxy.texts == ["Good evening!", "The stars are out tonight."]
    assert chat["text"] == "Good evening! The stars are out tonight."
    assert chat["outcome"] == "complete"
    (event,) = events
    assert event.data["target"] == KITCHEN
    assert event.data["entity_id"] == agent
    assert event.data["persona"] == "Companion"
    assert event.data["source"] == "service"
    assert event.data["text"] == chat["text"]
    asked = user_text(llm_server.requests[-1])
    assert asked.startswith("[Nobody has spoken")
    assert asked.endswith("Tell them the stars are out.")
    assert await hass.config_entries.async_unload(entry.entry_id)
    (turn,) = stored_turns(hass)
    assert turn["initiator"] == "proactive"
    assert turn["user"] == "Tell them the stars are out."


async def test_a_satellite_that_cannot_converse_announces_and_history_marks_it_proactive(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """announce for a satellite without START_CONVERSATION; the next turn sees it as the home's."""
    entry, _ = await setup_companion(hass, llm_server, proxy)
    llm_server.script(Reply.text("The laundry is done."), Reply.text("Again: laundry."))
    events = spoke_events(hass)

    await start_chat(hass, targets=[HALL], topic="the laundry")
    await start_chat(hass, targets=[HALL], instruction="Remind them again.")
    await hass.async_block_till_done()

    assert devices[HALL].heard.log == ["announce", "first audio", "audio ended"] * 2
    assert [e.data["text"] for e in events] == ["The laundry is done.", "Again: laundry."]
    history = messages(llm_server.requests[-1])
    users = [str(m["content"]) for m in history if m["role"] == "user"]
    assert len(users) == 2
    assert all(text.startswith("[Nobody has spoken") for text in users)
    assert users[0].endswith("Talk about: the laundry")
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_a_media_player_announces_the_stream_and_played_comes_once_it_goes_idle(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """play_media with announce and the stream URL; playing → idle fires the event once."""
    entry, _ = await setup_companion(hass, llm_server, proxy)
    lounge = devices[LOUNGE]
    llm_server.script(Reply.text("Dinner is ready. Come to the table."))
    events = spoke_events(hass)

    await start_chat(hass, targets=[LOUNGE])
    await asyncio.wait_for(lounge.heard.done.wait(), TIMEOUT)
    await hass.async_block_till_done()

    assert lounge.heard.extra[0]["announce"] is True
    assert lounge.heard.urls[0].startswith("http://homeassistant.test:8123/api/tts_proxy/")
    assert [e.data["text"] for e in events] == ["Dinner is ready. Come to the table."]
    assert dict(entry.runtime_data.playback.watching) == {}
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=60))
    await hass.async_block_till_done()
    assert len(events) == 1  # the fallback never fires after a real end
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_a_media_player_that_reports_nothing_is_played_after_the_estimated_length(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """No state change: played once the spoken text's length plus the margin has passed."""
    entry, _ = await setup_companion(hass, llm_server, proxy)
    text = "The post has arrived."
    llm_server.script(Reply.text(text))
    events = spoke_events(hass)

    await start_chat(hass, targets=[ATTIC])
    await asyncio.wait_for(devices[ATTIC].heard.done.wait(), TIMEOUT)
    await hass.async_block_till_done()
    assert events == []
    assert ATTIC in entry.runtime_data.playback.watching
    length = spoken_seconds(text) + FALLBACK_MARGIN
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=length + 1))
    await hass.async_block_till_done()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=length + 60))
    await hass.async_block_till_done()

    assert [e.data["text"] for e in events] == [text]
    assert dict(entry.runtime_data.playback.watching) == {}
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_the_person_speaking_over_a_proactive_answer_cancels_it_and_keeps_what_was_said(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """The satellite listens again mid-answer: the turn stops, only what was said is kept."""
    entry, _ = await setup_companion(hass, llm_server, proxy)
    kitchen = devices[KITCHEN]
    rest = asyncio.Event()
    llm_server.script(
        Reply(chunks=(TextChunk("Hello there. A"), TextChunk(" long story follows.", hold=rest)))
    )
    events = spoke_events(hass)

    call = hass.async_create_task(start_chat(hass, targets=[KITCHEN]))
    await asyncio.wait_for(kitchen.heard.first_audio.wait(), TIMEOUT)
    hass.states.async_set(KITCHEN, AssistSatelliteState.LISTENING)
    (chat,) = await call
    rest.set()
    await hass.async_block_till_done()

    assert chat["outcome"] == "interrupted"
    assert chat["text"] == "Hello there."
    assert events == []  # an interrupted answer was not played to its end
    assert await hass.config_entries.async_unload(entry.entry_id)
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "interrupted"
    said = assistant_text(turn)  # written up to the interruption: the rest never came
    assert said.startswith("Hello there.")
    assert "story" not in said


async def test_bad_targets_and_personas_are_refused_with_translated_errors(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """A light, a missing entity, an unknown persona: each a ServiceValidationError."""
    entry, _ = await setup_companion(hass, llm_server, proxy)
    hass.states.async_set("light.desk", "on")
    hass.states.async_set("media_player.radio", "idle", {"supported_features": 0})
    cases: dict[str, dict[str, object]] = {
        "no_targets": {"targets": []},
        "bad_target": {"targets": ["light.desk"]},
        "cannot_announce": {"targets": ["media_player.radio"]},
        "unknown_target": {"targets": ["media_player.nowhere"]},
        "unknown_persona": {"targets": [LOUNGE], "persona": "conversation.nobody"},
    }
    for key, data in cases.items():
        with pytest.raises(ServiceValidationError) as caught:
            await hass.services.async_call(DOMAIN, "start_chat", data, blocking=True)
        assert caught.value.translation_key == key
    assert llm_server.requests == []
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_a_person_coming_home_makes_the_state_chat_trigger_speak_on_the_satellite(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """person.anna → home: the trigger asks, start_chat runs, the satellite speaks."""
    write_profile(
        hass,
        "greeter",
        f"""
        [plugins]
        enabled = ["state_chat"]
        [plugins.state_chat]
        entities = ["person.anna"]
        targets = ["{HALL}"]
        """,
    )
    hass.states.async_set("person.anna", "not_home", {"friendly_name": "Anna"})
    entry, _ = await setup_companion(hass, llm_server, proxy, profile="greeter")
    llm_server.script(Reply.text("Welcome home, Anna!"))
    spoke = asyncio.Event()
    events: list[Event] = []

    def note(event: Event) -> None:
        """Collect the event and wake the test."""
        events.append(event)
        spoke.set()

    hass.bus.async_listen(EVENT_SPOKE, note)
    hass.states.async_set("person.anna", "home", {"friendly_name": "Anna"})
    await asyncio.wait_for(spoke.wait(), TIMEOUT)

    (event,) = events
    assert event.data["source"] == "state_chat"
    assert event.data["target"] == HALL
    assert event.data["text"] == "Welcome home, Anna!"
    assert user_text(llm_server.requests[-1]).endswith(
        "Anna has just come home. Greet them warmly in one or two sentences."
    )
    hass.states.async_set("person.anna", "home", {"friendly_name": "Anna", "x": 1})
    await hass.async_block_till_done()
    assert len(llm_server.requests) == 1  # still home is no new arrival
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_a_device_that_fails_to_play_raises_and_the_turn_is_stopped(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """A satellite whose announce fails: a translated error, and nothing is left watched."""
    entry, _ = await setup_companion(hass, llm_server, proxy)
    hall = devices[HALL]
    assert isinstance(hall, SpeakingSatellite)

    hall.failure = HomeAssistantError("offline")  # as a satellite that lost its connection
    llm_server.script(Reply.text("You will not hear this."))

    with pytest.raises(HomeAssistantError) as caught:
        await asyncio.wait_for(
            hass.services.async_call(DOMAIN, "start_chat", {"targets": [HALL]}, blocking=True),
            TIMEOUT,
        )

    assert caught.value.translation_key == "cannot_speak"
    assert dict(entry.runtime_data.playback.watching) == {}
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_the_blueprint_makes_an_automation_that_speaks_first(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """The shipped blueprint: its trigger input fires, start_chat runs, the satellite speaks."""
    folder = Path(hass.config.path("blueprints", "automation", "companion_agent"))
    await hass.async_add_executor_job(lambda: folder.mkdir(parents=True))
    await hass.async_add_executor_job(shutil.copy, BLUEPRINT, folder / BLUEPRINT.name)
    entry, _ = await setup_companion(hass, llm_server, proxy)
    llm_server.script(Reply.text("The washing machine is done."))
    events = spoke_events(hass)
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": {
                "use_blueprint": {
                    "path": f"companion_agent/{BLUEPRINT.name}",
                    "input": {
                        "when": [{"trigger": "state", "entity_id": "sensor.washer", "to": "off"}],
                        "targets": [HALL],
                        "instruction": "Tell them the washing is done.",
                    },
                }
            }
        },
    )
    hass.states.async_set("sensor.washer", "on")
    await hass.async_block_till_done()

    hass.states.async_set("sensor.washer", "off")
    await asyncio.wait_for(devices[HALL].heard.done.wait(), TIMEOUT)
    await hass.async_block_till_done()

    assert [e.data["text"] for e in events] == ["The washing machine is done."]
    assert user_text(llm_server.requests[-1]).endswith("Tell them the washing is done.")
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_the_persons_answer_on_the_satellite_continues_the_proactive_history(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """After start_conversation, the satellite's next turn sees what the companion said."""
    entry, agent = await setup_companion(hass, llm_server, proxy)
    llm_server.script(Reply.text("Shall I dim the lights?"), Reply.text("Done, enjoy."))
    await start_chat(hass, targets=[KITCHEN], instruction="Offer to dim the lights.")

    result = await asyncio.wait_for(
        conversation.async_converse(
            hass,
            "Yes please.",
            None,
            Context(),
            language="en",
            agent_id=agent,
            satellite_id=KITCHEN,
        ),
        TIMEOUT,
    )

    assert speech(result) == "Done, enjoy."
    sent = messages(llm_server.requests[-1])
    said = [str(m["content"]) for m in sent if m["role"] == "assistant"]
    assert said == ["Shall I dim the lights?"]
    users = [str(m["content"]) for m in sent if m["role"] == "user"]
    assert users[0].endswith("Offer to dim the lights.")
    assert users[-1] == "Yes please."
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_a_reported_exact_length_replaces_the_estimate(
    hass: HomeAssistant,
    llm_server: LLMServer,
    proxy: WyomingProxy,
    devices: dict[str, SpeakingSatellite | SpeakerPlayer],
) -> None:
    """A TTS that knows the audio lasts 120 s: not played at the estimate, played after 120 s."""
    entry, _ = await setup_companion(hass, llm_server, proxy)
    llm_server.script(Reply.text("A short line."))
    events = spoke_events(hass)

    (chat,) = await start_chat(hass, targets=[ATTIC])
    entry.runtime_data.playback.async_report_duration(str(chat["trace_id"]), 120.0)
    start = dt_util.utcnow()
    async_fire_time_changed(hass, start + timedelta(seconds=spoken_seconds("A short line.") + 10))
    await hass.async_block_till_done()
    assert events == []
    async_fire_time_changed(hass, start + timedelta(seconds=120 + FALLBACK_MARGIN + 1))
    await hass.async_block_till_done()

    assert [e.data["text"] for e in events] == ["A short line."]
    assert await hass.config_entries.async_unload(entry.entry_id)
