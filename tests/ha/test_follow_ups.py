"""``continue_conversation``: a reply that asks lets the satellite listen without the wake word.

Our agent decides, not Home Assistant's question-mark guess (``ChatLog.continue_conversation``):
a call held for the person's yes continues even when the reply ends otherwise, a persona whose
profile turns ``follow_ups`` off never does, nor a reply the person spoke over. Turns run
through HA's conversation API (the demo lock for the held call), the model is the scripted
server.
"""

from __future__ import annotations

import asyncio

import pytest
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session, llm
from pytest_homeassistant_custom_component.common import MockConfigEntry

from tests.ha.common import (
    SetupCompanion,
    SetupPersonas,
    add_satellite,
    entity_id,
    persona,
    speech,
    start_satellite_turn,
    write_profile,
)
from tests.ha.common.house import UNLOCK, build_house, state
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

TIMEOUT = 10.0
QUIET = "[output]\nfollow_ups = false\n"


async def converse_in(
    hass: HomeAssistant, agent_id: str, text: str, conversation_id: str | None = None
) -> tuple[conversation.ConversationResult, bool]:
    """Run one turn; return its result and what HA's own guess (the ChatLog's) would say."""
    with chat_session.async_get_chat_session(hass, conversation_id) as session:
        result = await conversation.async_converse(
            hass, text, session.conversation_id, Context(), language="en", agent_id=agent_id
        )
        with conversation.async_get_chat_log(hass, session) as chat_log:
            return result, chat_log.continue_conversation


@pytest.mark.parametrize(
    ("reply", "continues"),
    [
        ("Which room do you mean?", True),
        ("The red one or the blue one?\n", True),
        ('Did you say "the kitchen"?"', True),
        ("The kitchen light is on.", False),
        ("Is it raining? Take an umbrella anyway.", False),
    ],
)
async def test_a_reply_that_asks_continues_and_a_statement_does_not(
    hass: HomeAssistant,
    setup_entry: MockConfigEntry,
    llm_server: LLMServer,
    reply: str,
    *,
    continues: bool,
) -> None:
    """A question at the end continues; a statement, or a question before the end, does not."""
    llm_server.script(Reply.text(reply))
    result, _ = await converse_in(hass, entity_id(hass, setup_entry, "conversation"), "Hello")
    assert speech(result) == reply.strip()
    assert result.continue_conversation is continues


async def test_a_profile_with_follow_ups_off_never_continues(
    hass: HomeAssistant, setup_personas: SetupPersonas, llm_server: LLMServer
) -> None:
    """``follow_ups = false``: a question does not continue, though HA's guess would."""
    write_profile(hass, "quiet", QUIET)
    _, agents = await setup_personas({"Quiet": "quiet", "Asking": "default"})
    llm_server.script(Reply.text("Which room do you mean?"), Reply.text("Which room do you mean?"))
    quiet, guessed = await converse_in(hass, agents["Quiet"], "Turn on the light")
    asking, _ = await converse_in(hass, agents["Asking"], "Turn on the light")
    assert guessed is True  # HA's question-mark guess
    assert quiet.continue_conversation is False
    assert asking.continue_conversation is True


@pytest.mark.usefixtures("demo_devices")
async def test_a_held_unlock_continues_without_a_question_and_yes_runs_it(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """The unlock waits for a yes: the conversation continues though the reply ends in a full
    stop (HA's guess says no); the yes that follows runs it once, and that reply is done."""
    entry = await build_house(hass, setup_companion)
    agent = entity_id(hass, entry, "conversation")
    llm_server.script(
        Reply.tool_calls(("call_unlock", "HassTurnOff", UNLOCK)),
        Reply.text("I need your yes before I unlock the front door. Please say yes or no."),
        Reply.text("Done, the front door is unlocked."),
    )
    held, guessed = await converse_in(hass, agent, "Unlock the front door")
    assert guessed is False
    assert held.continue_conversation is True
    assert state(hass, "lock.front_door") == "locked"

    done, _ = await converse_in(hass, agent, "Yes, please.", held.conversation_id)
    assert state(hass, "lock.front_door") == "unlocked"
    assert done.continue_conversation is False


@pytest.mark.usefixtures("demo_devices")
async def test_a_held_unlock_with_follow_ups_off_does_not_continue(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """Off is off: a held call waits for a yes the person gives after waking the satellite."""
    write_profile(hass, "quiet", QUIET)
    assert await build_house(hass, setup_companion) is not None
    quiet = await setup_companion(persona("Quiet", "quiet", llm_apis=[llm.LLM_API_ASSIST]))
    llm_server.script(
        Reply.tool_calls(("call_unlock", "HassTurnOff", UNLOCK)),
        Reply.text("Shall I unlock the front door?"),
    )
    result, _ = await converse_in(hass, entity_id(hass, quiet, "conversation"), "Unlock it")
    assert state(hass, "lock.front_door") == "locked"
    assert result.continue_conversation is False


async def test_a_question_the_person_spoke_over_does_not_continue(
    hass: HomeAssistant, setup_entry: MockConfigEntry, llm_server: LLMServer
) -> None:
    """A new turn on the satellite interrupts the one still asking: that one does not go on."""
    _, satellite = add_satellite(hass)
    agent = entity_id(hass, setup_entry, "conversation")
    rest = asyncio.Event()
    asking = Reply.held("Do you want the long story?", " Or the short one?", until=rest)
    llm_server.script(asking, Reply.text("Which one?"))

    first = start_satellite_turn(hass, agent, "Tell me a story.", satellite_id=satellite)
    while not llm_server.requests:  # noqa: ASYNC110 - the server offers no event to wait on
        await asyncio.sleep(0.01)
    second = await asyncio.wait_for(
        start_satellite_turn(hass, agent, "A short one.", satellite_id=satellite), TIMEOUT
    )
    interrupted = await asyncio.wait_for(first, TIMEOUT)
    rest.set()
    assert second.continue_conversation is True
    assert interrupted.continue_conversation is False
