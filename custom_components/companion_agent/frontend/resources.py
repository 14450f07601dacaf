"""Serve the companion card to HA's frontend, and offer the subscription that feeds it.

``companion-card.js`` (built from the repository's ``frontend/`` by ``npm run build``) is
served at ``CARD_URL`` and loaded on every dashboard as an extra module, its version in the
URL so a new release is never read from a stale cache. ``async_setup_card`` runs once per
HA start (from the integration's ``async_setup``, which HA runs once however many entries
there are); without HA's frontend and HTTP server (a headless core) only the WebSocket
command is offered.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from homeassistant.core import HomeAssistant

from ..const import DOMAIN, LOGGER
from .websocket import async_register_websocket

CARD_FILE = Path(__file__).parent / "companion-card.js"
CARD_URL = f"/{DOMAIN}/companion-card.js"


def card_version(path: Path = CARD_FILE) -> str:
    """Return the short hash of the built card that busts caches when it changes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


async def async_setup_card(hass: HomeAssistant) -> None:
    """Offer the subscription; serve the card and add it to every dashboard."""
    async_register_websocket(hass)
    if hass.http is None or "frontend" not in hass.config.components:
        LOGGER.debug("No HA frontend here: the companion card is not served")
        return
    from homeassistant.components.frontend import add_extra_js_url  # noqa: PLC0415
    from homeassistant.components.http import StaticPathConfig  # noqa: PLC0415

    if not await hass.async_add_executor_job(CARD_FILE.is_file):
        LOGGER.warning("%s is missing (build it with npm run build in frontend/)", CARD_FILE)
        return
    version = await hass.async_add_executor_job(card_version)
    await hass.http.async_register_static_paths(
        [StaticPathConfig(CARD_URL, str(CARD_FILE), cache_headers=True)]
    )
    add_extra_js_url(hass, f"{CARD_URL}?v={version}")
