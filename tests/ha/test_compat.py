"""The HA internals the glue reads, in a real HA: read where HA has them, else a fallback.

Each feature served by an internal has its emulation of a changed HA beside the feature's
other tests (``test_emulated_ha_...``); here are the reads that turn no feature off.
"""

from __future__ import annotations

import pytest
from homeassistant.components.assist_pipeline import pipeline  # requirements_test.txt
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.compat import (
    async_get_entity,
    converter_hold_seconds,
    stream_response_chars,
)
from custom_components.companion_agent.conversation import CompanionConversationEntity
from tests.ha.common import agent_entity_id


async def test_the_stream_rule_is_hass_own_number(
    hass: HomeAssistant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before Assist is set up: 60; once it is, whatever number Assist has."""
    assert stream_response_chars(hass) == 60
    assert await async_setup_component(hass, "assist_pipeline", {})
    assert stream_response_chars(hass) == pipeline.STREAM_RESPONSE_CHARS
    monkeypatch.setattr(pipeline, "STREAM_RESPONSE_CHARS", 80)
    assert stream_response_chars(hass) == 80


async def test_emulated_ha_without_the_stream_rule_assumes_60(
    hass: HomeAssistant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newer HA with no such number (or another kind of value): 2026.2.3's 60."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    monkeypatch.setattr(pipeline, "STREAM_RESPONSE_CHARS", "sixty")
    assert stream_response_chars(hass) == 60
    monkeypatch.delattr(pipeline, "STREAM_RESPONSE_CHARS")
    assert stream_response_chars(hass) == 60


async def test_entities_are_found_through_their_platforms(
    hass: HomeAssistant, setup_entry: MockConfigEntry
) -> None:
    """A registered entity by its id; one not registered, or unloaded, is not found."""
    agent_id = agent_entity_id(hass, setup_entry)
    assert isinstance(async_get_entity(hass, agent_id), CompanionConversationEntity)
    assert async_get_entity(hass, "conversation.nobody") is None
    assert await hass.config_entries.async_unload(setup_entry.entry_id)
    assert async_get_entity(hass, agent_id) is None


@pytest.mark.parametrize(
    ("release", "held"),
    [
        ("2025.10.0", 5.0),
        ("2026.2.3", 5.0),
        ("2026.8.4", 5.0),
        ("2026.9.0", 1.5),
        ("2026.10.2", 1.5),
        ("2026.11.0", 0.0),
        ("2026.12.1", 0.0),
        ("2027.1.0b0", 0.0),
    ],
)
def test_emulated_releases_hold_back_what_their_tts_converter_holds(
    release: str, held: float
) -> None:
    """What HA's TTS converter holds back, by release (the README's reading of core's tts).

    2026.2 – 2026.8: ffmpeg probes a WAV stream (about 5 s); 2026.9 – 2026.10: with
    ``-probesize 32`` (about 1.4 s); 2026.11: a matching WAV passes through, another rate is
    converted from raw PCM at once. Only 2026.2.3 runs here: the others are version strings.
    """
    assert converter_hold_seconds(release) == held
