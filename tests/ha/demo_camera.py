"""HA's own demo camera, exposed to Assist: what the camera tool and AI tasks look through.

``demo_camera`` sets up the demo integration with its camera platform only (as HA's own
camera tests do) and exposes ``camera.demo_camera`` to the conversation agents. Its
snapshots are the demo's JPEG files, as HA serves them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from unittest.mock import patch

import pytest
from homeassistant.components import demo
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

CAMERA = "camera.demo_camera"


@pytest.fixture
async def demo_camera(hass: HomeAssistant) -> AsyncIterator[str]:
    """Set up HA's demo camera and expose it to Assist; return its entity id."""
    assert await async_setup_component(hass, "homeassistant", {})
    with patch(f"{demo.__name__}.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM", [Platform.CAMERA]):
        entry = MockConfigEntry(domain="demo")
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        assert hass.states.get(CAMERA) is not None
        async_expose_entity(hass, "conversation", CAMERA, True)
        yield CAMERA
