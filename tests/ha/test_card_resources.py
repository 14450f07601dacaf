"""The card served by the integration and loaded on every dashboard, once per HA start."""

from __future__ import annotations

from pathlib import Path

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.companion_agent.frontend.resources import CARD_FILE, CARD_URL, card_version
from tests.ha.common import SetupCompanion, persona


async def test_the_card_is_served_and_added_to_every_dashboard_once(
    hass: HomeAssistant, setup_companion: SetupCompanion, hass_client: ClientSessionGenerator
) -> None:
    """Two entries: one module URL with the card's hash, and the very file that ships."""
    from homeassistant.components.frontend import DATA_EXTRA_MODULE_URL

    assert await async_setup_component(hass, "frontend", {})
    await setup_companion(persona())
    await setup_companion(persona("Second"))
    urls = [u for u in hass.data[DATA_EXTRA_MODULE_URL].urls if u.startswith(CARD_URL)]
    assert urls == [f"{CARD_URL}?v={card_version()}"]
    client = await hass_client()
    response = await client.get(urls[0])
    assert response.status == 200
    assert await response.read() == CARD_FILE.read_bytes()
    assert "javascript" in response.headers["Content-Type"]


def test_the_version_follows_the_file(tmp_path: Path) -> None:
    """Another build, another version: caches never serve an old card."""
    (tmp_path / "a.js").write_text("one")
    (tmp_path / "b.js").write_text("two")
    assert card_version(tmp_path / "a.js") != card_version(tmp_path / "b.js")
    assert len(card_version(tmp_path / "a.js")) == 12
