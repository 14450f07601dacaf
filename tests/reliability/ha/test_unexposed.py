"""An entity the person did not expose to Assist cannot be acted on, whatever the model asks."""

from __future__ import annotations

import pytest
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant

from tests.ha.common import SetupCompanion
from tests.ha.common.house import build_house, say
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

pytestmark = pytest.mark.usefixtures("demo_devices")


async def test_a_call_on_an_unexposed_light_changes_nothing(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """The kitchen lights are not exposed (HA exposes lights by default; this one is taken off):
    the call fails and the light stays on."""
    house = await build_house(hass, setup_companion)
    async_expose_entity(hass, conversation.DOMAIN, "light.kitchen_lights", False)
    before = hass.states.get("light.kitchen_lights")
    assert before is not None
    llm_server.script(
        Reply.tool_calls(("call_1", "HassTurnOff", '{"name": "Kitchen Lights"}')),
        Reply.text("I can't reach that light."),
    )
    await say(hass, house, "Turn off the kitchen lights")
    after = hass.states.get("light.kitchen_lights")
    assert after is not None
    assert before.state == after.state == "on"
    messages = llm_server.requests[1]["messages"]
    assert isinstance(messages, list)
    told = [m for m in messages if m["role"] == "tool"]
    assert told
    assert "error" in str(told[0]["content"]).lower()
