"""What the start_chat tests share: the devices, a companion with a Piper voice, the call.

The devices are real HA entities from ``tests/ha/speakers.py``; the ``devices`` and
``companion`` fixtures that set them up are in ``conftest.py``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from homeassistant.components.assist_pipeline.pipeline import (
    async_get_pipeline,
    async_update_pipeline,
)
from homeassistant.components.assist_satellite import AssistSatelliteEntityFeature
from homeassistant.core import Event, HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN, EVENT_SPOKE
from tests.ha.entries import SetupCompanion, agents_by_title, persona, wyoming_voice
from tests.ha.speakers import SpeakerPlayer, SpeakingSatellite
from tests.support.wyoming_proxy import WyomingProxy

TIMEOUT = 20.0
CONVERSE = AssistSatelliteEntityFeature.ANNOUNCE | AssistSatelliteEntityFeature.START_CONVERSATION
KITCHEN = "assist_satellite.kitchen"
HALL = "assist_satellite.hall"
LOUNGE = "media_player.lounge"
ATTIC = "media_player.attic"

type Devices = dict[str, SpeakingSatellite | SpeakerPlayer]


@dataclass(frozen=True, slots=True)
class Companion:
    """Our entry with one persona and a Piper voice, and the persona's agent."""

    entry: MockConfigEntry
    agent: str


class SpokeEvents(list[Event]):
    """Every companion_agent_spoke event since it was made; ``arrived`` is set at each."""

    def __init__(self, hass: HomeAssistant) -> None:
        """Start listening on ``hass``'s bus."""
        super().__init__()
        self.arrived = asyncio.Event()
        hass.bus.async_listen(EVENT_SPOKE, self._note)

    def _note(self, event: Event) -> None:
        """Keep the event and wake whoever waits."""
        self.append(event)
        self.arrived.set()


async def async_setup_speaking_companion(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    proxy: WyomingProxy,
    profile: str = "default",
) -> Companion:
    """Set up a persona on ``profile`` and a Piper voice; the Assist pipeline uses the persona."""
    entry = await setup_companion(persona(profile=profile), wyoming_voice(proxy.host, proxy.port))
    agent = agents_by_title(hass, entry)["Companion"]
    await async_update_pipeline(hass, async_get_pipeline(hass), conversation_engine=agent)
    return Companion(entry=entry, agent=agent)


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
