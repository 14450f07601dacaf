"""A held unlock that the assistant itself ends (a reload, HA stopping) ends out loud.

Anna asks to unlock the front door; it waits for her yes. Then an administrator adds an
AI task (the entry reloads) or HA stops and starts again. The held call must end where
everyone can see it: the ``companion_agent_confirmation`` event with its reason, Anna's
card (its Approve button goes), the audit log; and Anna's next turn, after the restart,
tells the model it was cancelled and not performed. Her late "yes" unlocks nothing, and
Ben, speaking in the same conversation, neither hears nor takes her notice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest
from homeassistant import config_entries
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import CONF_NAME, EVENT_HOMEASSISTANT_STOP
from homeassistant.core import HomeAssistant, callback
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from custom_components.companion_agent.const import (
    CONF_CONFIRM_TTL,
    DOMAIN,
    EVENT_CONFIRMATION,
    SUBENTRY_AI_TASK,
)
from custom_components.companion_agent.engine.audit import read_audit
from custom_components.companion_agent.engine.engine import AUDIT_FILE
from tests.ha.common import SetupCompanion, ask, async_load, entity_id, persona
from tests.ha.common.card import Card, user_token
from tests.ha.common.house import UNLOCK
from tests.support.chat_requests import user_text
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

pytestmark = pytest.mark.usefixtures("demo_lock")

INTERRUPTED = '"status":"interrupted"'
NOT_PERFORMED = '"performed":false'


async def house(
    hass: HomeAssistant, setup_companion: SetupCompanion, options: Mapping[str, object] | None
) -> tuple[MockConfigEntry, str]:
    """Set up HA's demo lock (exposed) and one persona with Assist; return it and its agent."""
    assert await async_setup_component(hass, "conversation", {})
    await async_load(hass, MockConfigEntry(domain="demo"))
    async_expose_entity(hass, conversation.DOMAIN, "lock.front_door", True)
    entry = await setup_companion(persona(llm_apis=[llm.LLM_API_ASSIST]), options=options)
    return entry, entity_id(hass, entry, "conversation")


def lock_state(hass: HomeAssistant) -> str:
    """Return the front door's state."""
    state = hass.states.get("lock.front_door")
    assert state is not None
    return state.state


def confirmation_events(hass: HomeAssistant) -> list[Mapping[str, object]]:
    """Collect every ``companion_agent_confirmation`` event from now on."""
    events: list[Mapping[str, object]] = []
    hass.bus.async_listen(EVENT_CONFIRMATION, callback(lambda event: events.append(event.data)))
    return events


async def hold_unlock(hass: HomeAssistant, agent: str, server: LLMServer, user_id: str) -> str:
    """Have the model try to unlock the front door for ``user_id``; return the conversation."""
    server.script(
        Reply.tool_calls(("call_unlock", "HassTurnOff", UNLOCK)),
        Reply.text("Should I unlock the front door?"),
    )
    result = await ask(hass, agent, "Unlock the front door", user_id=user_id)
    assert result.conversation_id is not None
    assert lock_state(hass) == "locked"
    return result.conversation_id


async def add_ai_task(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """Add an AI task sub-entry through its form, as an administrator does; the entry reloads."""
    engine = entry.runtime_data.engine
    flow = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_AI_TASK), context={"source": config_entries.SOURCE_USER}
    )
    done = await hass.config_entries.subentries.async_configure(
        flow["flow_id"], {CONF_NAME: "Porch"}
    )
    assert done["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert entry.runtime_data.engine is not engine  # reloaded: a new engine


async def restart(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """Stop HA as it stops, then start the entry again on the same config folder."""
    engine = entry.runtime_data.engine
    hass.bus.async_fire(EVENT_HOMEASSISTANT_STOP)
    await hass.async_block_till_done()
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.runtime_data.engine is not engine


def audit(hass: HomeAssistant) -> list[Mapping[str, object]]:
    """Return the audit log's records."""
    return list(read_audit(Path(hass.config.path(DOMAIN, AUDIT_FILE))))


async def test_a_reload_ends_a_held_unlock_out_loud_and_its_person_hears_it(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """Adding an AI task reloads the entry: the event, the card, the audit, then Anna's notice."""
    entry, agent = await house(hass, setup_companion, None)
    anna, anna_token = await user_token(hass, "Anna")
    card = await Card.open(hass, hass_ws_client, agent, anna_token)
    events = confirmation_events(hass)
    conversation_id = await hold_unlock(hass, agent, llm_server, anna)
    held = await card.until("confirmation", status="requested")
    assert held["token"]

    await add_ai_task(hass, entry)

    assert [e["status"] for e in events] == ["requested", "interrupted"]
    ended = events[1]
    assert "token" not in ended
    assert ended["conversation_id"] == conversation_id
    assert "restarted" in str(ended["reason"])
    assert "NOT performed" in str(ended["reason"])
    gone = await card.until("confirmation", status="interrupted")
    assert gone["id"] == held["id"]
    assert "token" not in gone
    again = await Card.open(hass, hass_ws_client, agent, anna_token)
    assert again.of("snapshot")[0]["confirmations"] == []
    [record] = [r for r in audit(hass) if r["decision"] == "interrupted"]
    assert (record["tool"], record["outcome"], record["user_id"]) == (
        "HassTurnOff",
        "cancelled",
        anna,
    )
    assert record["token"] == held["id"]

    llm_server.script(Reply.text("I'm sorry, that was cancelled when I restarted."))
    await ask(hass, agent, "Yes", conversation_id, user_id=anna)
    told = user_text(llm_server.requests[-1]).replace(" ", "")
    assert INTERRUPTED in told
    assert NOT_PERFORMED in told
    assert lock_state(hass) == "locked"
    assert [e["status"] for e in events] == ["requested", "interrupted"]  # the yes ran nothing

    llm_server.script(Reply.text("Anything else?"))
    await ask(hass, agent, "Yes", conversation_id, user_id=anna)
    assert INTERRUPTED not in user_text(llm_server.requests[-1]).replace(" ", "")  # told once


async def test_a_yes_after_a_reload_confirms_nothing_and_a_new_call_waits_again(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """The model may ask again after Anna's late "yes": that call is held anew, not run."""
    entry, agent = await house(hass, setup_companion, None)
    anna, _token = await user_token(hass, "Anna")
    events = confirmation_events(hass)
    conversation_id = await hold_unlock(hass, agent, llm_server, anna)
    await add_ai_task(hass, entry)
    llm_server.script(
        Reply.tool_calls(("call_again", "HassTurnOff", UNLOCK)),
        Reply.text("Should I unlock the front door?"),
    )
    await ask(hass, agent, "Yes, unlock it", conversation_id, user_id=anna)
    assert lock_state(hass) == "locked"
    assert [e["status"] for e in events] == ["requested", "interrupted", "requested"]
    assert INTERRUPTED in user_text(llm_server.requests[-2]).replace(" ", "")


@pytest.mark.parametrize("end", ["reload", "expiry"])
async def test_only_the_person_it_was_held_for_hears_how_it_ended(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer, end: str
) -> None:
    """Ben speaks next in Anna's conversation: he is not told, and Anna still is."""
    options = {CONF_CONFIRM_TTL: 0.2} if end == "expiry" else None
    entry, agent = await house(hass, setup_companion, options)
    anna, _anna_token = await user_token(hass, "Anna")
    ben, _ben_token = await user_token(hass, "Ben")
    conversation_id = await hold_unlock(hass, agent, llm_server, anna)
    if end == "reload":
        await add_ai_task(hass, entry)
    else:
        await asyncio.sleep(0.3)
    status = '"status":"interrupted"' if end == "reload" else '"status":"expired"'

    llm_server.script(Reply.text("Yes to what?"))
    await ask(hass, agent, "Yes", conversation_id, user_id=ben)
    assert status not in user_text(llm_server.requests[-1]).replace(" ", "")
    assert lock_state(hass) == "locked"

    llm_server.script(Reply.text("That was cancelled; nothing was unlocked."))
    await ask(hass, agent, "Yes", conversation_id, user_id=anna)
    told = user_text(llm_server.requests[-1]).replace(" ", "")
    assert status in told
    assert NOT_PERFORMED in told
    assert lock_state(hass) == "locked"


async def test_ha_stopping_ends_a_held_unlock_and_after_the_restart_its_person_hears_it(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """HA stops (no unload) and starts again: the end is announced and audited at the stop,
    and Anna's first turn after the restart is told, Ben's is not."""
    entry, agent = await house(hass, setup_companion, None)
    anna, _anna_token = await user_token(hass, "Anna")
    ben, _ben_token = await user_token(hass, "Ben")
    events = confirmation_events(hass)
    conversation_id = await hold_unlock(hass, agent, llm_server, anna)

    await restart(hass, entry)

    assert [e["status"] for e in events] == ["requested", "interrupted"]
    assert "restarted" in str(events[1]["reason"])
    [record] = [r for r in audit(hass) if r["decision"] == "interrupted"]
    assert (record["tool"], record["user_id"]) == ("HassTurnOff", anna)
    llm_server.script(Reply.text("Yes to what?"), Reply.text("It was cancelled, sorry."))
    await ask(hass, agent, "Yes", conversation_id, user_id=ben)
    assert INTERRUPTED not in user_text(llm_server.requests[-1]).replace(" ", "")
    await ask(hass, agent, "Yes", conversation_id, user_id=anna)
    told = user_text(llm_server.requests[-1]).replace(" ", "")
    assert INTERRUPTED in told
    assert NOT_PERFORMED in told
    assert lock_state(hass) == "locked"
    assert [e["status"] for e in events] == ["requested", "interrupted"]


async def test_a_stale_approval_after_a_reload_is_refused_as_interrupted(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """An automation's Approve action still carrying the old token: refused, and says why."""
    from homeassistant.exceptions import ServiceValidationError

    entry, agent = await house(hass, setup_companion, None)
    anna, _token = await user_token(hass, "Anna")
    events = confirmation_events(hass)
    await hold_unlock(hass, agent, llm_server, anna)
    token = str(events[0]["token"])
    await add_ai_task(hass, entry)
    with pytest.raises(ServiceValidationError) as refused:
        await hass.services.async_call(
            DOMAIN, "confirm_action", {"token": token}, blocking=True, return_response=True
        )
    assert refused.value.translation_key == "confirmation_interrupted"
    assert lock_state(hass) == "locked"


async def test_removing_the_entry_ends_a_held_unlock_out_loud_and_leaves_no_notice_file(
    hass: HomeAssistant, setup_companion: SetupCompanion, llm_server: LLMServer
) -> None:
    """The entry goes while Anna's unlock waits: the event and the audit say so; its notice
    file goes with the entry (no persona is left to tell)."""
    entry, agent = await house(hass, setup_companion, None)
    anna, _token = await user_token(hass, "Anna")
    events = confirmation_events(hass)
    await hold_unlock(hass, agent, llm_server, anna)
    folder = Path(hass.config.path(DOMAIN))
    assert await hass.config_entries.async_remove(entry.entry_id)
    await hass.async_block_till_done()
    assert [e["status"] for e in events] == ["requested", "interrupted"]
    [record] = [r for r in audit(hass) if r["decision"] == "interrupted"]
    assert (record["tool"], record["user_id"]) == ("HassTurnOff", anna)
    left = await hass.async_add_executor_job(lambda: list(folder.glob(f"{entry.entry_id}.*")))
    assert left == []
    assert lock_state(hass) == "locked"
