"""Our agent and voice on one Assist pipeline, and the turns our agent starts, for tests.

``voice`` sets up Assist, an entry with a persona and a Piper voice (through the recording
proxy) and a pipeline of the two; the proxy's journal notes when HA opens the voice's
stream (``STREAM_OPENED``) among what Piper is asked. ``keep_turns`` keeps every turn the
engine starts, to cancel one as a barge-in would or to read its speech.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from homeassistant.components.assist_pipeline.pipeline import Pipeline  # requirements_test.txt
from homeassistant.components.tts import TTSAudioResponse
from homeassistant.components.tts.entity import TTSAudioRequest
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.engine.engine import Engine
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.engine.turn.request import TurnRequest
from custom_components.companion_agent.runtime import CompanionRuntime
from custom_components.companion_agent.tts import CompanionTtsEntity
from tests.ha.entries import SetupCompanion, entity_id, persona, tts_entity, wyoming_voice
from tests.ha.ha_satellite import create_pipeline
from tests.support.wyoming_proxy import WyomingProxy

STREAM_OPENED = "stream opened"


@dataclass
class Voice:
    """Our agent and voice in one entry, and what the test watches of them."""

    entry: MockConfigEntry
    agent: str
    tts: CompanionTtsEntity
    pipeline: Pipeline
    journal: list[str]
    turns: list[Turn] = field(default_factory=list)

    @property
    def runtime(self) -> CompanionRuntime:
        """Return the entry's runtime."""
        runtime: CompanionRuntime = self.entry.runtime_data
        return runtime


def keep_turns(engine: Engine, turns: list[Turn]) -> None:
    """Keep every turn ``engine`` starts in ``turns`` (for the engine's life)."""
    start = engine.start_turn

    def start_and_keep(request: TurnRequest) -> Turn:
        """Start the turn and keep its handle."""
        turn = start(request)
        turns.append(turn)
        return turn

    setattr(engine, "start_turn", start_and_keep)  # noqa: B010 - the instance, not the class


@pytest.fixture
async def voice(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> Voice:
    """Set up Assist, an entry with a persona and a voice (via the proxy), and a pipeline."""
    return await async_voice(hass, setup_companion, proxy, monkeypatch)


async def async_voice(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
    *,
    llm_apis: Sequence[str] = (),
) -> Voice:
    """Set up what ``voice`` does, the persona on ``llm_apis`` (HA's tools: none by default)."""
    entry = await setup_companion(persona(llm_apis=llm_apis), wyoming_voice(proxy.host, proxy.port))
    agent = entity_id(hass, entry, "conversation")
    tts = tts_entity(hass, entry)
    pipeline = await create_pipeline(hass, "Companion voice", agent, tts.entity_id)
    journal = proxy.journal
    watched = Voice(entry=entry, agent=agent, tts=tts, pipeline=pipeline, journal=journal)
    opened = CompanionTtsEntity.async_stream_tts_audio

    async def stream_opened(
        entity: CompanionTtsEntity, request: TTSAudioRequest
    ) -> TTSAudioResponse:
        """Note that HA opened the stream, then open it."""
        journal.append(STREAM_OPENED)
        return await opened(entity, request)

    monkeypatch.setattr(CompanionTtsEntity, "async_stream_tts_audio", stream_opened)
    keep_turns(watched.runtime.engine, watched.turns)
    return watched
