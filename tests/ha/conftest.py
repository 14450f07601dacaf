"""Fixtures for tests that run a real Home Assistant through the harness.

The helpers these fixtures and the tests share are in ``tests/ha/common/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from unittest.mock import patch

import pytest
from homeassistant.components import demo
from homeassistant.components.assist_satellite import AssistSatelliteEntityFeature
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.config_entries import ConfigEntryState, ConfigSubentryData
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from tests.ha.common import (
    CAMERA,
    SetupCompanion,
    SetupPersonas,
    agents_by_title,
    async_load,
    companion_entry,
    persona,
)
from tests.ha.common.house import DEMO_PLATFORMS
from tests.ha.common.pipelines import Voice, async_voice
from tests.ha.common.releases import ToolAnnotations, ToolResult
from tests.ha.common.satellites import OnSatellite, setup_satellite_companion, wait_state
from tests.ha.common.speakers import (
    ATTIC,
    CONVERSE,
    HALL,
    KITCHEN,
    LOUNGE,
    Companion,
    Devices,
    SpeakerPlayer,
    SpeakingSatellite,
    async_setup_speaking_companion,
    setup_speakers,
)
from tests.support.asr_server import ScriptedAsrServer
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.satellite import SatellitePeer
from tests.support.satellite_script import ScriptedSatellite
from tests.support.whisper import WhisperPeer
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


@pytest.fixture
async def on_wyoming_satellite(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    piper: PiperPeer,
    whisper: WhisperPeer,
    satellite: SatellitePeer,
) -> tuple[MockConfigEntry, str]:
    """Set up the companion (whisper, our persona, piper) with the real satellite, idle."""
    entry, satellite_id = await setup_satellite_companion(
        hass,
        setup_companion,
        piper,
        (whisper.host, whisper.port, whisper.model),
        (satellite.host, satellite.port),
    )
    await wait_state(hass, satellite_id, "idle")
    return entry, satellite_id


@pytest.fixture
async def voice(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    proxy: WyomingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> Voice:
    """Set up Assist, an entry with a persona and a voice (via the proxy), and a pipeline."""
    return await async_voice(hass, setup_companion, proxy, monkeypatch)


@pytest.fixture
def demo_devices() -> Iterator[None]:
    """Load only the demo lock, light and cover; let the lock unlock at once, not in 2 s.

    A module opts in with usefixtures; ``tests/ha/common/house.py`` builds the house on them.
    """
    with (
        patch("homeassistant.components.demo.lock.LOCK_UNLOCK_DELAY", 0),
        patch(
            "homeassistant.components.demo.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM",
            DEMO_PLATFORMS,
        ),
    ):
        yield


@pytest.fixture
def demo_lock() -> Iterator[None]:
    """Load only HA's demo lock, which unlocks at once (a module opts in with usefixtures)."""
    with (
        patch("homeassistant.components.demo.lock.LOCK_UNLOCK_DELAY", 0),
        patch(
            "homeassistant.components.demo.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM",
            [Platform.LOCK],
        ),
    ):
        yield


@pytest.fixture
async def demo_camera(hass: HomeAssistant) -> AsyncIterator[str]:
    """Set up HA's demo camera and expose it to Assist; return its entity id.

    The demo integration loads its camera platform only (as HA's own camera tests do); its
    snapshots are the demo's JPEG files, as HA serves them.
    """
    assert await async_setup_component(hass, "homeassistant", {})
    with patch(f"{demo.__name__}.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM", [Platform.CAMERA]):
        entry = MockConfigEntry(domain="demo")
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        assert hass.states.get(CAMERA) is not None
        async_expose_entity(hass, "conversation", CAMERA, True)
        yield CAMERA


@pytest.fixture
def emulate_2026_10(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give HA's ``helpers.llm`` the 2026.10 ``ToolResult`` and ``ToolAnnotations``."""
    monkeypatch.setattr(llm, "ToolResult", ToolResult, raising=False)
    monkeypatch.setattr(llm, "ToolAnnotations", ToolAnnotations, raising=False)
