"""Images the companion takes: their type read from the bytes, their size bounded.

Whatever a camera or an attachment hands over is checked here before a model sees it: the
type is what the bytes say (JPEG, PNG, GIF or WebP; a declared type is never trusted), and
an image over ``ImageBounds`` (bytes, or pixels as its header states them) is refused. A
host that can (HA has Pillow) shrinks an image to ``ImageBounds.fit`` first.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from ..errors import ImageRefusedError
from ..messages import ImagePart

DEFAULT_MAX_BYTES = 2_000_000
DEFAULT_MAX_PIXELS = 1_500_000
_JPEG_SIZE_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xDA)})


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBounds:
    """How large an image may be: bytes as sent, and pixels (width × height)."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_pixels: int = DEFAULT_MAX_PIXELS

    def fit(self, width: int, height: int) -> tuple[int, int]:
        """Return the largest size with the same shape that holds ``max_pixels`` at most."""
        if width * height <= self.max_pixels:
            return width, height
        scale = math.sqrt(self.max_pixels / (width * height))
        return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def image_type(data: bytes) -> str | None:
    """Return the MIME type the bytes are (JPEG, PNG, GIF, WebP), or None."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """Return (width, height) as the image's header states it, or None when unreadable."""
    try:
        match image_type(data):
            case "image/png":
                return _pair(">II", data[16:24])
            case "image/gif":
                return _pair("<HH", data[6:10])
            case "image/webp":
                return _webp_size(data)
            case "image/jpeg":
                return _jpeg_size(data)
    except struct.error:
        return None
    return None


def checked_image(data: bytes, source: str, bounds: ImageBounds) -> ImagePart:
    """Return the bytes as an image for the model; raise ``ImageRefusedError`` if they fail.

    ``source`` says where the image came from (a camera's id, an attachment).
    """
    mime = image_type(data)
    if mime is None:
        raise ImageRefusedError(f"{source} did not give a JPEG, PNG, GIF or WebP", source=source)
    if len(data) > bounds.max_bytes:
        raise ImageRefusedError(
            f"the image from {source} is {len(data)} bytes; at most {bounds.max_bytes} are taken",
            source=source,
        )
    size = image_size(data)
    if size is None or min(size) < 1:
        raise ImageRefusedError(f"the image from {source} is damaged", source=source)
    if size[0] * size[1] > bounds.max_pixels:
        raise ImageRefusedError(
            f"the image from {source} is {size[0]}x{size[1]} pixels; "
            f"at most {bounds.max_pixels} pixels are taken",
            source=source,
        )
    return ImagePart(mime_type=mime, data=data, source=source)


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Walk a JPEG's markers to its frame header and read the size there."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in _JPEG_STANDALONE:
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _JPEG_SIZE_MARKERS:
            height, width = _pair(">HH", data[at + 5 : at + 9])
            return width, height
        if length < 2:
            return None
        at += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    """Read a WebP's size from its first chunk (lossy, lossless or extended)."""
    chunk = data[12:16]
    if chunk == b"VP8 ":
        width, height = _pair("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        (bits,) = struct.unpack("<I", data[21:25])
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


def _pair(layout: str, raw: bytes) -> tuple[int, int]:
    """Unpack two integers; raise ``struct.error`` when ``raw`` is too short."""
    first, second = struct.unpack(layout, raw)
    return int(first), int(second)
