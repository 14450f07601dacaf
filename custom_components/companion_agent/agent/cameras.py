"""HA's cameras as the engine's camera source: only those exposed to Assist, snapshots bounded.

The companion sees a camera only when it is exposed to Assist (the conversation agents'
exposure, as HA's own tools check it). A snapshot comes from ``camera.async_get_image``
within the engine's snapshot wait, and is shrunk to the engine's bounds if need be.
"""

from __future__ import annotations

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError

from ..engine.errors import ToolValidationError, VisionError
from ..engine.vision import SNAPSHOT_TIMEOUT, Camera, ImageBounds, ImagePart
from .images import async_fit_image

CAMERA_DOMAIN = "camera"


class HassCameras:
    """The cameras one turn may look through: the ones exposed to Assist."""

    def __init__(self, hass: HomeAssistant) -> None:
        """Bind to HA."""
        self.hass = hass

    def cameras(self) -> list[Camera]:
        """Return the exposed cameras, by entity id, with their names."""
        return [
            Camera(camera_id=state.entity_id, name=state.name)
            for state in self.hass.states.async_all(CAMERA_DOMAIN)
            if async_should_expose(self.hass, CONVERSATION_DOMAIN, state.entity_id)
        ]

    async def snapshot(self, camera_id: str, bounds: ImageBounds) -> ImagePart:
        """Return a snapshot of an exposed camera, fit to ``bounds``."""
        if not camera_id.startswith(f"{CAMERA_DOMAIN}.") or not async_should_expose(
            self.hass, CONVERSATION_DOMAIN, camera_id
        ):
            raise ToolValidationError(f"{camera_id} is not a camera exposed to Assist")
        # HA's camera needs PyTurboJPEG, installed once a camera integration is set up:
        # imported here, where a camera exists, never when the integration loads.
        from homeassistant.components import camera  # noqa: PLC0415

        try:
            image = await camera.async_get_image(
                self.hass, camera_id, timeout=int(SNAPSHOT_TIMEOUT)
            )
        except HomeAssistantError as err:
            raise VisionError(f"the camera {camera_id} gave no snapshot: {err}") from err
        return await async_fit_image(self.hass, image.content, camera_id, bounds)
