"""The ``camera`` tool: a snapshot of one of the cameras the host exposes, into the turn.

The host says which cameras the companion may see and takes the snapshot (``CameraSource``);
the engine bounds it in time and size and checks it (``images.py``). A chat model that sees
images gets the image with the tool's result; any other gets the vision model's
description (``VisionSummarizer``). The image is never kept: stored turns hold the
placeholder, memory and the audit log only the result's text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..chars import strip_format, valid_text
from ..errors import VisionError
from ..json_types import JSONObject, JSONValue
from ..messages import ImagePart
from ..tools.contract import ToolContext, ToolImages, ToolSpec
from ..tools.holding import HoldingHint
from ..tools.registry import Tool
from .images import ImageBounds, checked_image
from .summarizer import VisionSummarizer

CAMERA_TOOL = "camera"
SNAPSHOT_TIMEOUT = 5.0
MAX_CAMERAS = 32
MAX_NAME_CHARS = 60
DESCRIPTION = (
    "Take a snapshot of one of the home's cameras now and see what it shows. Use it when "
    "the person asks what a camera sees, who is at the door, whether a car or a parcel is "
    "there. Cameras: {cameras}."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Camera:
    """A camera the companion may look through: the host's id for it and its name."""

    camera_id: str
    name: str


class CameraSource(Protocol):
    """The host's cameras: which the companion may see, and a snapshot of one."""

    def cameras(self) -> Sequence[Camera]:
        """Return the cameras the companion may see (the ones exposed to it)."""
        ...

    async def snapshot(self, camera_id: str, bounds: ImageBounds) -> ImagePart:
        """Return a snapshot, shrunk to ``bounds`` where the host can; raise ``ToolError``."""
        ...


def camera_tool(
    source: CameraSource,
    *,
    sees_images: bool,
    summarizer: VisionSummarizer | None,
    bounds: ImageBounds | None = None,
    snapshot_timeout: float = SNAPSHOT_TIMEOUT,
) -> Tool | None:
    """Return the camera tool over ``source``'s cameras, or None when it could not help.

    With ``sees_images`` the image goes to the chat model; else ``summarizer`` describes it.
    Neither, or no camera: no tool.
    """
    cameras = list(source.cameras())[:MAX_CAMERAS]
    if not cameras or (not sees_images and summarizer is None):
        return None
    limits = bounds or ImageBounds()

    async def look(args: JSONObject, ctx: ToolContext) -> JSONValue | ToolImages:
        """Take the snapshot; return it for the model to see, or its description."""
        camera_id = str(args["camera"])
        try:
            async with asyncio.timeout(snapshot_timeout):
                taken = await source.snapshot(camera_id, limits)
        except TimeoutError as err:
            raise VisionError(
                f"the camera {camera_id} gave no snapshot within {snapshot_timeout:g} s"
            ) from err
        image = checked_image(taken.data, camera_id, limits)
        if sees_images or summarizer is None:
            value: JSONObject = {
                "camera": camera_id,
                "snapshot": image.placeholder,
                "note": "the snapshot follows as an image: look at it to answer",
            }
            return ToolImages(value=value, images=(image,))
        question = str(args.get("question") or "")
        description = await summarizer.describe(image, question, ctx.language)
        return {"camera": camera_id, "description": description}

    described = summarizer.timeout if summarizer is not None and not sees_images else 0.0
    names = {camera.camera_id: camera.name for camera in cameras}

    def looked_at(args: JSONObject) -> str | None:
        """Name the camera a call looks through, for the holding line."""
        return names.get(str(args.get("camera", ""))) or None

    return Tool(
        spec=_spec(cameras),
        handler=look,
        timeout_ms=int((snapshot_timeout + described + 2.0) * 1000),
        holding=HoldingHint(kind="camera", target=looked_at),
    )


def _spec(cameras: Sequence[Camera]) -> ToolSpec:
    """Describe the tool to the model, naming every camera it may look through."""
    listed = ", ".join(f"{camera.camera_id} ({_name(camera.name)})" for camera in cameras)
    return ToolSpec(
        name=CAMERA_TOOL,
        description=DESCRIPTION.format(cameras=listed),
        parameters={
            "type": "object",
            "properties": {
                "camera": {
                    "type": "string",
                    "enum": [camera.camera_id for camera in cameras],
                    "description": "The camera to look through.",
                },
                "question": {
                    "type": "string",
                    "description": "What the person wants to know, e.g. 'who is at the door?'.",
                },
            },
            "required": ["camera"],
            "additionalProperties": False,
        },
    )


def _name(name: str) -> str:
    """Return a camera's name made safe for the tool's description (short, one line)."""
    text = " ".join(strip_format(valid_text(name)).split())
    return text[:MAX_NAME_CHARS] or "unnamed"
