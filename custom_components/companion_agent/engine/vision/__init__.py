"""Vision: camera snapshots into a turn; images checked, bounded, described for text models."""

from ..messages import ImagePart
from .camera import (
    CAMERA_TOOL,
    SNAPSHOT_TIMEOUT,
    Camera,
    CameraSource,
    VisionSummarizer,
    camera_tool,
)
from .images import ImageBounds, checked_image, image_size, image_type

__all__ = [
    "CAMERA_TOOL",
    "SNAPSHOT_TIMEOUT",
    "Camera",
    "CameraSource",
    "ImageBounds",
    "ImagePart",
    "VisionSummarizer",
    "camera_tool",
    "checked_image",
    "image_size",
    "image_type",
]
