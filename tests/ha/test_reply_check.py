"""Truthful and brief through a real HA: a false claim corrected, a ramble cut, both counted."""

from __future__ import annotations

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.diagnostics import async_get_config_entry_diagnostics
from tests.ha.common import agent_entity_id, assistant_text, stored_turns
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

CORRECTION = "I haven't changed anything yet."
RAMBLE = "The kitchen light is turned on. " + (
    "You can turn on the light again. You can turn on the light again now. "
    "You can turn on the lights again. You can turn on the light once more. " * 4
)


async def test_the_issues_ramble_is_heard_corrected_and_short(
    hass: HomeAssistant, setup_entry: MockConfigEntry, llm_server: LLMServer
) -> None:
    """No call, a claim, then near-identical sentences: HA speaks the correction and two
    sentences; the ChatLog and the stored turn hold the correction; the turn is marked cut
    and the correction counted in the diagnostics."""
    llm_server.script(Reply.text(RAMBLE, chunk_size=6))
    agent_id = agent_entity_id(hass, setup_entry)
    with (
        chat_session.async_get_chat_session(hass) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        result = await conversation.async_converse(
            hass, "Turn on the kitchen light", session.conversation_id, Context(), "en", agent_id
        )
        shown = chat_log.content[-1]
    speech = result.response.speech["plain"]["speech"]
    assert speech == (
        f"{CORRECTION} You can turn on the light again. You can turn on the light again now."
    )
    assert isinstance(shown, conversation.AssistantContent)
    assert (shown.content or "").startswith(f"{CORRECTION} You can turn on the light again.")
    assert "turned on" not in (shown.content or "")
    (stored,) = stored_turns(hass)
    assert assistant_text(stored) == shown.content
    assert stored["speech_cut"] == "repeated"
    figures = await async_get_config_entry_diagnostics(hass, setup_entry)
    total = figures["usage"]["total"]
    assert (total["corrected_claims"], total["speech_cut"]) == (1, 1)
