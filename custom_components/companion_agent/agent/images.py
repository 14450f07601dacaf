"""Images from HA for a model: camera snapshots (the cameras exposed to Assist) and attachments.

The companion sees a camera only when it is exposed to Assist (the conversation agents'
exposure, as HA's own tools check it). A snapshot comes from ``camera.async_get_image``
within the engine's snapshot wait (``HassCameras``); an AI task's attachment is read from
its file, bounded.

Either is made fit for a model: an image the engine's bounds take is passed as it is. Any
other (too many pixels or bytes, or a type the engine does not take) is shrunk with Pillow
(which Home Assistant ships) in the executor, to JPEG within the bounds. What Pillow cannot
read is refused, as is a picture so large that decoding it would be a danger.
"""

from __future__ import annotations

import io
from pathlib import Path

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from PIL import Image, UnidentifiedImageError

from ..engine.errors import ImageRefusedError, ToolValidationError, VisionError
from ..engine.vision import SNAPSHOT_TIMEOUT, Camera, ImageBounds, ImagePart, checked_image

CAMERA_DOMAIN = "camera"
MAX_FILE_BYTES = 25_000_000
"""An attachment larger than this is not read at all."""
MAX_DECODED_PIXELS = 50_000_000
JPEG_QUALITY = 85


async def async_fit_image(
    hass: HomeAssistant, data: bytes, source: str, bounds: ImageBounds
) -> ImagePart:
    """Return ``data`` as an image within ``bounds``, shrunk if need be; raise if it cannot."""
    try:
        return checked_image(data, source, bounds)
    except ImageRefusedError:
        pass
    return await hass.async_add_executor_job(shrink_image, data, source, bounds)


async def async_read_image(
    hass: HomeAssistant, path: Path, source: str, bounds: ImageBounds
) -> ImagePart:
    """Read an image file (bounded) and fit it; raise ``ImageRefusedError`` if it cannot be."""
    data = await hass.async_add_executor_job(_read_bounded, path, source)
    return await async_fit_image(hass, data, source, bounds)


def shrink_image(data: bytes, source: str, bounds: ImageBounds) -> ImagePart:
    """Decode, shrink to ``bounds`` and encode as JPEG; blocking (run it in the executor)."""
    out = io.BytesIO()
    try:
        with Image.open(io.BytesIO(data)) as picture:
            width, height = picture.size
            if width * height > MAX_DECODED_PIXELS:
                raise ImageRefusedError(
                    f"the image from {source} is {width}x{height} pixels, too large to read",
                    source=source,
                )
            size = bounds.fit(width, height)
            picture.draft("RGB", size)
            shrunk = picture.convert("RGB")
            shrunk.thumbnail(size)
            shrunk.save(out, "JPEG", quality=JPEG_QUALITY)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as err:
        raise ImageRefusedError(
            f"{source} is not an image that can be read", source=source
        ) from err
    return checked_image(out.getvalue(), source, bounds)


def _read_bounded(path: Path, source: str) -> bytes:
    """Read a file of at most ``MAX_FILE_BYTES``; raise ``ImageRefusedError`` otherwise."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise ImageRefusedError(f"{source} could not be read", source=source) from err
    if len(data) > MAX_FILE_BYTES:
        raise ImageRefusedError(f"{source} is larger than {MAX_FILE_BYTES} bytes", source=source)
    return data


# HA's cameras as the engine's camera source.
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
