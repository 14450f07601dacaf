"""Images the companion takes: the type read from the bytes, bounds in bytes and pixels, the wire.

The images are real files in each format, made with Pillow (which Home Assistant ships).
"""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from custom_components.companion_agent.engine.errors import ImageRefusedError
from custom_components.companion_agent.engine.llm.wire import wire_messages
from custom_components.companion_agent.engine.messages import (
    AssistantMessage,
    ImagePart,
    SystemMessage,
    ToolCallRequest,
    ToolMessage,
    UserMessage,
)
from custom_components.companion_agent.engine.vision import (
    ImageBounds,
    checked_image,
    image_size,
    image_type,
)
from tests.engine.common import picture


@pytest.mark.parametrize(
    ("kind", "mime"),
    [("JPEG", "image/jpeg"), ("PNG", "image/png"), ("GIF", "image/gif"), ("WEBP", "image/webp")],
)
def test_the_type_and_size_come_from_the_bytes(kind: str, mime: str) -> None:
    """JPEG, PNG, GIF and WebP are told by their bytes, and their size read from the header."""
    data = picture(321, 123, kind)
    assert image_type(data) == mime
    assert image_size(data) == (321, 123)


def test_lossless_webp_and_progressive_jpeg_sizes_are_read() -> None:
    """A lossless WebP (VP8L) and a progressive JPEG (SOF2) have their sizes read too."""
    image = Image.linear_gradient("L").resize((77, 55)).convert("RGB")
    lossless, progressive = io.BytesIO(), io.BytesIO()
    image.save(lossless, "WEBP", lossless=True)
    image.save(progressive, "JPEG", progressive=True)
    assert image_size(lossless.getvalue()) == (77, 55)
    assert image_size(progressive.getvalue()) == (77, 55)


def test_an_image_within_the_bounds_is_taken_as_its_bytes_say() -> None:
    """The type is what the bytes are, whatever a host declared; the bytes are unchanged."""
    data = picture(640, 480, "PNG")
    image = checked_image(data, "camera.front_door", ImageBounds())
    assert (image.mime_type, image.data, image.source) == ("image/png", data, "camera.front_door")
    assert image.placeholder == "[image from camera.front_door]"
    assert repr(image) == "ImagePart(mime_type='image/png', source='camera.front_door')"


@pytest.mark.parametrize(
    ("data", "bounds", "says"),
    [
        (b"<html>not an image</html>", ImageBounds(), "did not give a JPEG, PNG, GIF or WebP"),
        (picture(100, 100), ImageBounds(max_bytes=100), "at most 100 are taken"),
        (picture(1200, 1000), ImageBounds(max_pixels=1_000_000), "1200x1000 pixels"),
        (picture(50, 50)[:20], ImageBounds(), "damaged"),
    ],
    ids=["not-an-image", "too-many-bytes", "too-many-pixels", "cut-short"],
)
def test_an_image_out_of_bounds_or_not_an_image_is_refused(
    data: bytes, bounds: ImageBounds, says: str
) -> None:
    """Not an image, too many bytes or pixels, or a header cut short: refused, saying why."""
    with pytest.raises(ImageRefusedError, match=says) as caught:
        checked_image(data, "camera.porch", bounds)
    assert caught.value.source == "camera.porch"


def test_bounds_fit_a_large_image_in_its_shape() -> None:
    """A large image's fitted size keeps its shape and holds the pixel bound; small ones stay."""
    bounds = ImageBounds(max_pixels=1_000_000)
    width, height = bounds.fit(4000, 3000)
    assert width * height <= 1_000_000
    assert abs(width / height - 4 / 3) < 0.01
    assert bounds.fit(640, 480) == (640, 480)


def test_a_tool_results_images_follow_the_rounds_results_as_one_user_message() -> None:
    """Tool messages stay together; their images follow them as data URL content parts."""
    jpeg = picture(64, 48)
    image = ImagePart(mime_type="image/jpeg", data=jpeg, source="camera.front_door")
    calls = (
        ToolCallRequest(call_id="c1", name="camera", arguments='{"camera": "camera.front_door"}'),
        ToolCallRequest(call_id="c2", name="clock", arguments="{}"),
    )
    wire = wire_messages(
        [
            SystemMessage(content="Be brief."),
            UserMessage(content="Who is at the door?"),
            AssistantMessage(tool_calls=calls),
            ToolMessage(call_id="c1", content='{"camera": "camera.front_door"}', images=(image,)),
            ToolMessage(call_id="c2", content='{"time": "12:00"}'),
            AssistantMessage(content="A courier."),
        ]
    )
    assert [m["role"] for m in wire] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
    ]
    shown = wire[5]["content"]
    assert isinstance(shown, list)
    assert shown[0] == {
        "type": "text",
        "text": "[image from camera.front_door]: what the tool call above returned, "
        "for you to look at.",
    }
    url = f"data:image/jpeg;base64,{base64.b64encode(jpeg).decode()}"
    assert shown[1] == {"type": "image_url", "image_url": {"url": url}}


def test_a_user_message_with_images_becomes_content_parts() -> None:
    """Text first, then each image as a data URL; without images the content stays text."""
    png = picture(10, 10, "PNG")
    image = ImagePart(mime_type="image/png", data=png, source="media-source://x")
    wire = wire_messages(
        [UserMessage(content="Describe it."), UserMessage(content="And this?", images=(image,))]
    )
    assert wire[0] == {"role": "user", "content": "Describe it."}
    url = f"data:image/png;base64,{base64.b64encode(png).decode()}"
    assert wire[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "And this?"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }
