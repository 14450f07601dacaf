"""An entry's runtime: one frozen ``{engine, health, playback}``; HA's rules handed in."""

from __future__ import annotations

import dataclasses

import pytest
from homeassistant.core import HomeAssistant

from custom_components.companion_agent.agent.guard_rules import DEFAULT_RULES
from custom_components.companion_agent.proactive.speak import SPEAKER_ENTITY
from tests.ha.common import SetupCompanion


async def test_the_runtime_is_one_frozen_engine_with_its_watchers(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    """Nothing else lives per entry but its personas' last good rules, its household's voices
    and its satellites' speaking turns; HA's guard rules and speaker ids reach the engine."""
    entry = await setup_companion()
    runtime = entry.runtime_data
    fields = [f.name for f in dataclasses.fields(runtime)]
    assert fields == ["engine", "health", "playback", "rules", "voices", "speaking"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        runtime.engine = runtime.engine
    settings = runtime.engine.settings
    assert settings.rules == DEFAULT_RULES
    assert settings.host.speakers is SPEAKER_ENTITY
    assert SPEAKER_ENTITY.fullmatch("assist_satellite.kitchen")
    assert not SPEAKER_ENTITY.fullmatch("light.kitchen")
    engine = runtime.engine
    assert engine.memory is not None  # the embedded store, by default
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert engine.memory is None  # closed with the engine
