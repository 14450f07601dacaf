"""One whole turn through a real HA with a real model: llama.cpp's server and SmolLM2-135M.

The model is small and its chat template offers no tools (it answers in words, and its words
run on until the repetition check stops them): whatever it answers, the turn ends with a
spoken line, nothing changes without a tool call, and a call changes only the bed light.
"""

from __future__ import annotations

from collections.abc import Iterator
from unittest.mock import patch

import pytest
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import Platform
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session, llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from tests.ha.common import async_load, companion_entry, entity_id, persona
from tests.support.llama import LlamaPeer

EXPOSED = ("lock.front_door", "light.bed_light", "cover.garage_door", "light.ceiling_lights")


@pytest.fixture(autouse=True)
def demo_devices() -> Iterator[None]:
    """Load only HA's demo lock, light and cover."""
    with patch(
        "homeassistant.components.demo.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM",
        [Platform.LOCK, Platform.LIGHT, Platform.COVER],
    ):
        yield


def states(hass: HomeAssistant) -> dict[str, str]:
    """Return the state of every demo device."""
    return {
        s.entity_id: s.state
        for s in hass.states.async_all()
        if s.domain in {"lock", "light", "cover"}
    }


async def test_a_real_model_turn_acts_only_through_a_tool_and_ends_spoken(
    hass: HomeAssistant, llama: LlamaPeer
) -> None:
    """ "Turn on the bed light" on SmolLM2: a spoken line; only a completed call changes a
    device, and only the bed light."""
    assert await async_setup_component(hass, "conversation", {})
    await async_load(hass, MockConfigEntry(domain="demo"))
    for exposed in EXPOSED:
        async_expose_entity(hass, conversation.DOMAIN, exposed, True)
    entry = await async_load(
        hass, companion_entry(llama.url, persona(llm_apis=[llm.LLM_API_ASSIST]))
    )
    before = states(hass)
    with chat_session.async_get_chat_session(hass) as session:
        result = await conversation.async_converse(
            hass,
            "Turn on the bed light",
            session.conversation_id,
            Context(),
            language="en",
            agent_id=entity_id(hass, entry, "conversation"),
        )
        with conversation.async_get_chat_log(hass, session) as chat_log:
            content = list(chat_log.content)
    speech = result.response.speech["plain"]["speech"]
    results = [c for c in content if isinstance(c, conversation.ToolResultContent)]
    after = states(hass)
    assert speech.strip()
    changed = {e for e in after if after[e] != before[e]}
    done = [r for r in results if r.tool_result.get("status") != "pending_confirmation"]
    assert changed <= ({"light.bed_light"} if done else set())
    assert (after["lock.front_door"], after["cover.garage_door"]) == ("locked", "closed")
