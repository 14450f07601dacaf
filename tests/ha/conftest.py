"""Fixtures for tests that run a real Home Assistant through the harness."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
from homeassistant.components.assist_satellite import AssistSatelliteEntityFeature
from homeassistant.config_entries import ConfigEntryState, ConfigSubentryData
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from tests.ha.entries import (
    SetupCompanion,
    SetupPersonas,
    agents_by_title,
    async_load,
    companion_entry,
    persona,
)
from tests.ha.satellite_setup import OnSatellite, setup_satellite_companion, wait_state
from tests.ha.speakers import SpeakerPlayer, SpeakingSatellite, setup_speakers
from tests.ha.start_chat import (
    ATTIC,
    CONVERSE,
    HALL,
    KITCHEN,
    LOUNGE,
    Companion,
    Devices,
    async_setup_speaking_companion,
)
from tests.support.asr_server import ScriptedAsrServer
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.satellite_script import ScriptedSatellite
from tests.support.wyoming_proxy import WyomingProxy


@pytest.fixture(autouse=True)
async def auto_setup(hass: HomeAssistant, enable_custom_integrations: None, tmp_path: Path) -> None:
    """Give HA a fresh config folder; load HA's core integration, which Assist needs."""
    hass.config.config_dir = str(tmp_path)
    assert await async_setup_component(hass, "homeassistant", {})


@pytest.fixture
def setup_companion(hass: HomeAssistant, llm_server: LLMServer) -> SetupCompanion:
    """Return a function that sets up our entry, with any sub-entries, on the local server."""

    async def set_up(
        *subentries: ConfigSubentryData, options: Mapping[str, object] | None = None
    ) -> MockConfigEntry:
        """Set up HA's conversation component and the entry; it must load."""
        assert await async_setup_component(hass, "conversation", {})
        entry = companion_entry(llm_server.url, *(subentries or [persona()]), options=options)
        return await async_load(hass, entry)

    return set_up


@pytest.fixture
def setup_personas(hass: HomeAssistant, setup_companion: SetupCompanion) -> SetupPersonas:
    """Return a function that sets up one persona per ``title: profile``."""

    async def set_up(
        personas: Mapping[str, str], *, options: Mapping[str, object] | None = None
    ) -> tuple[MockConfigEntry, dict[str, str]]:
        """Set up the entry and find each persona's agent."""
        subentries = (persona(title, profile) for title, profile in personas.items())
        entry = await setup_companion(*subentries, options=options)
        return entry, agents_by_title(hass, entry)

    return set_up


@pytest.fixture
async def one_persona(setup_personas: SetupPersonas) -> tuple[MockConfigEntry, str]:
    """Set up one persona, Ada, on the default profile; return the entry and Ada's agent."""
    entry, agents = await setup_personas({"Ada": "default"})
    return entry, agents["Ada"]


@pytest.fixture
async def setup_entry(setup_companion: SetupCompanion) -> MockConfigEntry:
    """Set up our entry with one persona that may control the house through Assist."""
    return await setup_companion(persona(llm_apis=[llm.LLM_API_ASSIST]))


@pytest.fixture
async def devices(hass: HomeAssistant) -> Devices:
    """Load a conversing satellite, an announcing one, a media player and a silent one."""
    hass.config.internal_url = "http://homeassistant.test:8123"
    assert await async_setup_component(hass, "assist_pipeline", {})
    found: Devices = {
        KITCHEN: SpeakingSatellite("kitchen", CONVERSE),
        HALL: SpeakingSatellite("hall", AssistSatelliteEntityFeature.ANNOUNCE),
        LOUNGE: SpeakerPlayer("lounge"),
        ATTIC: SpeakerPlayer("attic", reports_state=False),
    }
    satellites = [d for d in found.values() if isinstance(d, SpeakingSatellite)]
    players = [d for d in found.values() if isinstance(d, SpeakerPlayer)]
    await setup_speakers(hass, satellites, players)
    return found


@pytest.fixture
async def companion(
    hass: HomeAssistant, setup_companion: SetupCompanion, proxy: WyomingProxy
) -> AsyncIterator[Companion]:
    """Set up one persona with a Piper voice (through the proxy); unload it at the end."""
    speaking = await async_setup_speaking_companion(hass, setup_companion, proxy)
    yield speaking
    if speaking.entry.state is ConfigEntryState.LOADED:
        assert await hass.config_entries.async_unload(speaking.entry.entry_id)


@pytest.fixture
async def scripted_satellite(socket_enabled: None) -> AsyncIterator[ScriptedSatellite]:
    """Run the scripted Wyoming satellite on 127.0.0.1."""
    async with ScriptedSatellite() as running:
        yield running


@pytest.fixture
async def scripted_asr(socket_enabled: None) -> AsyncIterator[ScriptedAsrServer]:
    """Run the scripted ASR server: it hears ``asr_server.TEXT`` in any audio."""
    async with ScriptedAsrServer() as running:
        yield running


@pytest.fixture
async def on_satellite(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    piper: PiperPeer,
    scripted_asr: ScriptedAsrServer,
    scripted_satellite: ScriptedSatellite,
) -> AsyncIterator[OnSatellite]:
    """Set up the companion (Piper's voice, the scripted ASR) with the scripted satellite."""
    asr, satellite = scripted_asr, scripted_satellite
    entry, entity = await setup_satellite_companion(
        hass, setup_companion, piper, (asr.host, asr.port, "tiny"), (satellite.host, satellite.port)
    )
    await satellite.wait_connected()
    await wait_state(hass, entity, "idle")
    yield OnSatellite(entry=entry, entity_id=entity, satellite=satellite, asr=asr)
    if entry.state is ConfigEntryState.LOADED:
        assert await hass.config_entries.async_unload(entry.entry_id)
