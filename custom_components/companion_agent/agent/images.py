"""Images from HA (camera snapshots, AI task attachments) made fit for a model.

An image the engine's bounds take is passed as it is. Any other (too many pixels or bytes,
or a type the engine does not take) is shrunk with Pillow (which Home Assistant ships) in
the executor, to JPEG within the bounds. What Pillow cannot read is refused, as is a
picture so large that decoding it would be a danger.
"""

from __future__ import annotations

import io
from pathlib import Path

from homeassistant.core import HomeAssistant
from PIL import Image, UnidentifiedImageError

from ..engine.errors import ImageRefusedError
from ..engine.vision import ImageBounds, ImagePart, checked_image

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
