"""The playback watcher through a real HA: played after the answer, cancelled on a barge-in.

The satellite is an entity registered in the entity registry on a device of its own; the
tests drive its state with ``hass.states.async_set``, the same state changes a real
``AssistSatelliteEntity`` writes (``listening → processing → responding → idle``).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import NamedTuple

import pytest
from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.components.assist_satellite.entity import AssistSatelliteState
from homeassistant.const import EVENT_STATE_CHANGED
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.helpers import device_registry as dr
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.companion_agent.engine.speech.audio_length import spoken_seconds
from custom_components.companion_agent.voice.playback import WATCH_TIMEOUT
from tests.ha.common import (
    GATES,
    Gate,
    SetupPersonas,
    add_satellite,
    assistant_text,
    speech,
    start_satellite_turn,
    stored_turns,
    write_plugin,
    write_profile,
)
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

TIMEOUT = 10.0
LONG_ANSWER = "It is sunny. Take a hat. And bring some water for the long walk."
LISTENER_MANIFEST = """
    [plugin]
    id = "listener"
    type = "hook"
    entry = "plugin:ListenerPlugin"
"""
LISTENER_CODE = '''
    """A user hook plugin that notes each on_after_playback."""

    from custom_components.companion_agent.engine.plugins import HookPlugin, TurnContext
    from tests.ha.common import GATES


    class ListenerPlugin(HookPlugin):
        """Note what was played."""

        async def on_after_playback(
            self, user_text: str, assistant_text: str, ctx: TurnContext
        ) -> None:
            """Note the played answer."""
            GATES["listener"].log.append(f"played: {assistant_text}")
            GATES["listener"].passed.set()
'''


class Listener(NamedTuple):
    """One persona whose hook plugin notes each played answer at ``gate``."""

    entry: MockConfigEntry
    agent: str
    gate: Gate


@pytest.fixture
async def listener(hass: HomeAssistant, setup_personas: SetupPersonas) -> Listener:
    """Set up one persona with the listening hook plugin."""
    GATES["listener"] = gate = Gate()
    write_plugin(hass, "listener", LISTENER_MANIFEST, LISTENER_CODE)
    write_profile(hass, "heard", '[plugins]\nenabled = ["listener"]\n')
    entry, agents = await setup_personas({"Heard": "heard"})
    return Listener(entry, agents["Heard"], gate)


async def test_answer_played_on_the_satellite_runs_the_playback_hook_once(
    hass: HomeAssistant, llm_server: LLMServer, listener: Listener
) -> None:
    """Responding, then idle: on_after_playback gets the answer once, and the turn is let go."""
    device_id, satellite = add_satellite(hass)
    entry, agent_id, gate = listener
    watcher = entry.runtime_data.playback
    llm_server.script(Reply.text("The oven is on."))

    hass.states.async_set(satellite, AssistSatelliteState.PROCESSING)
    result = await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "Oven?", device_id=device_id), TIMEOUT
    )
    assert speech(result) == "The oven is on."
    assert satellite in watcher.watching
    await hass.async_block_till_done()
    assert gate.log == []  # the answer has not played yet

    hass.states.async_set(satellite, AssistSatelliteState.RESPONDING)
    hass.states.async_set(satellite, AssistSatelliteState.IDLE)
    await asyncio.wait_for(gate.passed.wait(), TIMEOUT)
    assert dict(watcher.watching) == {}
    hass.states.async_set(satellite, AssistSatelliteState.RESPONDING)
    hass.states.async_set(satellite, AssistSatelliteState.IDLE)
    await hass.async_block_till_done(wait_background_tasks=True)

    assert gate.log == ["played: The oven is on."]
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_listening_again_after_a_finished_answer_is_a_follow_up_not_a_barge_in(
    hass: HomeAssistant,
    llm_server: LLMServer,
    listener: Listener,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Continued conversation: listening once the answer's audio had time to end: played."""
    device_id, satellite = add_satellite(hass)
    entry, agent_id, gate = listener
    llm_server.script(Reply.text("Which room?"))

    hass.states.async_set(satellite, AssistSatelliteState.PROCESSING)
    await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "Lights on", device_id=device_id), TIMEOUT
    )
    hass.states.async_set(satellite, AssistSatelliteState.RESPONDING)
    freezer.tick(spoken_seconds("Which room?"))  # a calm voice has said it all
    hass.states.async_set(satellite, AssistSatelliteState.LISTENING)
    await asyncio.wait_for(gate.passed.wait(), TIMEOUT)

    assert gate.log == ["played: Which room?"]
    assert await hass.config_entries.async_unload(entry.entry_id)  # writes the history
    assert [turn["outcome"] for turn in stored_turns(hass)] == ["complete"]


async def spoken_over_after(
    hass: HomeAssistant,
    llm_server: LLMServer,
    listener: Listener,
    freezer: FrozenDateTimeFactory,
    seconds: float,
    *,
    length: float | None = None,
) -> tuple[MockConfigEntry, Gate]:
    """Play a finished three-sentence answer, then listen again ``seconds`` after responding."""
    device_id, satellite = add_satellite(hass)
    entry, agent_id, gate = listener
    watcher = entry.runtime_data.playback
    llm_server.script(Reply.text(LONG_ANSWER))
    hass.states.async_set(satellite, AssistSatelliteState.PROCESSING)
    await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "Walk?", device_id=device_id), TIMEOUT
    )
    if length is not None:
        watcher.async_report_duration(watcher.watching[satellite], length)
    hass.states.async_set(satellite, AssistSatelliteState.RESPONDING)
    freezer.tick(seconds)
    hass.states.async_set(satellite, AssistSatelliteState.LISTENING)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert dict(watcher.watching) == {}
    await entry.runtime_data.engine.flush()
    return entry, gate


async def test_listening_again_long_before_the_audio_could_end_is_a_barge_in(
    hass: HomeAssistant,
    llm_server: LLMServer,
    listener: Listener,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Spoken over half a second in: stored interrupted with the sentences that had begun."""
    entry, gate = await spoken_over_after(hass, llm_server, listener, freezer, 0.5)
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "interrupted"
    assert assistant_text(turn) == "It is sunny. Take a hat."  # the fastest voice was in the second
    assert gate.log == []  # spoken over: not played to its end
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_an_exact_length_tells_a_barge_in_the_estimate_would_miss(
    hass: HomeAssistant,
    llm_server: LLMServer,
    listener: Listener,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Three seconds of a ten-second answer: a barge-in, though a fast voice could be done."""
    entry, gate = await spoken_over_after(hass, llm_server, listener, freezer, 3.0, length=10.0)
    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "interrupted"
    assert assistant_text(turn) == "It is sunny. Take a hat."
    assert gate.log == []
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_without_an_exact_length_three_seconds_is_a_follow_up(
    hass: HomeAssistant,
    llm_server: LLMServer,
    listener: Listener,
    freezer: FrozenDateTimeFactory,
) -> None:
    """The same three seconds with only the estimate: the fastest voice is done, so played."""
    entry, gate = await spoken_over_after(hass, llm_server, listener, freezer, 3.0)
    assert [turn["outcome"] for turn in stored_turns(hass)] == ["complete"]
    assert [assistant_text(turn) for turn in stored_turns(hass)] == [LONG_ANSWER]
    await asyncio.wait_for(gate.passed.wait(), TIMEOUT)  # the hook runs in the background
    assert gate.log == [f"played: {LONG_ANSWER}"]
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_idle_without_responding_is_not_played(
    hass: HomeAssistant, llm_server: LLMServer, listener: Listener
) -> None:
    """A pipeline that ends without speech (processing → idle) is forgotten, not played."""
    _, satellite = add_satellite(hass)
    entry, agent_id, gate = listener
    llm_server.script(Reply.text("Done."))

    hass.states.async_set(satellite, AssistSatelliteState.PROCESSING)
    await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "Go.", satellite_id=satellite), TIMEOUT
    )
    assert satellite in entry.runtime_data.playback.watching
    hass.states.async_set(satellite, AssistSatelliteState.IDLE)
    await hass.async_block_till_done(wait_background_tasks=True)

    assert dict(entry.runtime_data.playback.watching) == {}
    assert gate.log == []
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_person_speaking_over_the_answer_cancels_the_turn(
    hass: HomeAssistant, llm_server: LLMServer, listener: Listener
) -> None:
    """Listening again mid-answer: the turn stops, is stored interrupted with what was shown."""
    _, satellite = add_satellite(hass)
    entry, agent_id, gate = listener
    full = "First, a story. It is a very long story about the weather in the hills tonight."
    llm_server.script(Reply.text(full, chunk_size=2, delay=0.05))
    shown: list[str] = []
    streaming = asyncio.Event()

    def on_delta(_log: conversation.ChatLog, delta: dict[str, object]) -> None:
        """Collect the streamed text; say when a few words are out."""
        if content := delta.get("content"):
            shown.append(str(content))
        if len("".join(shown)) >= 10:
            streaming.set()

    hass.states.async_set(satellite, AssistSatelliteState.PROCESSING)
    with (
        chat_session.async_get_chat_session(hass) as session,
        conversation.async_get_chat_log(hass, session, chat_log_delta_listener=on_delta),
    ):
        running = hass.async_create_task(
            conversation.async_converse(
                hass,
                "Tell me a story.",
                session.conversation_id,
                Context(),
                language="en",
                agent_id=agent_id,
                satellite_id=satellite,
            )
        )
        await asyncio.wait_for(streaming.wait(), TIMEOUT)
        hass.states.async_set(satellite, AssistSatelliteState.RESPONDING)
        hass.states.async_set(satellite, AssistSatelliteState.LISTENING)
        result = await asyncio.wait_for(running, TIMEOUT)
    await entry.runtime_data.engine.flush()

    (turn,) = stored_turns(hass)
    assert turn["outcome"] == "interrupted"
    said = assistant_text(turn)
    assert said == "".join(shown)
    assert full.startswith(said)
    assert len(said) < len(full)
    assert full.startswith(speech(result))
    assert dict(entry.runtime_data.playback.watching) == {}
    hass.states.async_set(satellite, AssistSatelliteState.IDLE)  # nothing left to play
    await hass.async_block_till_done(wait_background_tasks=True)
    assert gate.log == []
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_turn_without_a_satellite_is_not_watched(
    hass: HomeAssistant, llm_server: LLMServer, listener: Listener
) -> None:
    """A typed turn (no device, no satellite) or one from a device without a satellite."""
    entry, agent_id, _ = listener
    owner = MockConfigEntry(domain="test_phone")
    owner.add_to_hass(hass)
    phone = dr.async_get(hass).async_get_or_create(
        config_entry_id=owner.entry_id, identifiers={("test_phone", "phone")}
    )
    llm_server.script(Reply.text("Hi."), Reply.text("Hi again."))

    await asyncio.wait_for(start_satellite_turn(hass, agent_id, "Hello."), TIMEOUT)
    await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "Hello.", device_id=phone.id), TIMEOUT
    )

    assert dict(entry.runtime_data.playback.watching) == {}
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_a_new_turn_replaces_the_watched_one_and_unload_unsubscribes(
    hass: HomeAssistant, llm_server: LLMServer, listener: Listener
) -> None:
    """One turn per satellite; after unload no listener is left and states change nothing."""
    _, satellite = add_satellite(hass)
    entry, agent_id, gate = listener
    baseline = hass.bus.async_listeners().get(EVENT_STATE_CHANGED, 0)
    watcher = entry.runtime_data.playback
    llm_server.script(Reply.text("One."), Reply.text("Two."))

    await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "1", satellite_id=satellite), TIMEOUT
    )
    first = watcher.watching[satellite]
    await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "2", satellite_id=satellite), TIMEOUT
    )
    assert list(watcher.watching) == [satellite]
    assert watcher.watching[satellite] != first
    assert hass.bus.async_listeners().get(EVENT_STATE_CHANGED, 0) > baseline

    assert await hass.config_entries.async_unload(entry.entry_id)
    assert dict(watcher.watching) == {}
    assert hass.bus.async_listeners().get(EVENT_STATE_CHANGED, 0) == baseline
    hass.states.async_set(satellite, AssistSatelliteState.RESPONDING)
    hass.states.async_set(satellite, AssistSatelliteState.IDLE)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert gate.log == []


async def test_watched_turn_is_dropped_after_the_timeout(
    hass: HomeAssistant, llm_server: LLMServer, listener: Listener
) -> None:
    """A satellite that never reports the end of playback does not hold its turn forever."""
    _, satellite = add_satellite(hass)
    entry, agent_id, gate = listener
    llm_server.script(Reply.text("Still here."))
    baseline = hass.bus.async_listeners().get(EVENT_STATE_CHANGED, 0)

    await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "Hi.", satellite_id=satellite), TIMEOUT
    )
    hass.states.async_set(satellite, AssistSatelliteState.RESPONDING)
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=WATCH_TIMEOUT - 1))
    await hass.async_block_till_done()
    assert satellite in entry.runtime_data.playback.watching
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=WATCH_TIMEOUT + 1))
    await hass.async_block_till_done()

    assert dict(entry.runtime_data.playback.watching) == {}
    assert hass.bus.async_listeners().get(EVENT_STATE_CHANGED, 0) == baseline
    hass.states.async_set(satellite, AssistSatelliteState.IDLE)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert gate.log == []
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_a_new_turn_on_the_satellite_cancels_the_one_still_running(
    hass: HomeAssistant, llm_server: LLMServer, listener: Listener
) -> None:
    """Barge-in by a new turn: the older, still running turn stops and is stored interrupted."""
    _, satellite = add_satellite(hass)
    entry, agent_id, _ = listener
    long = "This answer never gets past its first words."
    rest = asyncio.Event()
    held = Reply.held("This answer ", long[12:], until=rest)
    llm_server.script(held, Reply.text("Yes?"))

    first = start_satellite_turn(hass, agent_id, "Tell me everything.", satellite_id=satellite)
    while not llm_server.requests:  # noqa: ASYNC110 - the server offers no event to wait on
        await asyncio.sleep(0.01)
    second = await asyncio.wait_for(
        start_satellite_turn(hass, agent_id, "Stop.", satellite_id=satellite), TIMEOUT
    )
    await asyncio.wait_for(first, TIMEOUT)  # ends at once, not after the whole answer
    await entry.runtime_data.engine.flush()

    assert speech(second) == "Yes?"
    turns = {str(turn["user"]): turn for turn in stored_turns(hass)}
    assert turns["Stop."]["outcome"] == "complete"
    assert turns["Tell me everything."]["outcome"] == "interrupted"
    said = assistant_text(turns["Tell me everything."])
    assert len(said) < len(long)
    rest.set()
    assert await hass.config_entries.async_unload(entry.entry_id)
