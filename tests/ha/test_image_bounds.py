"""Images from a real HA kept within bounds: a large picture shrunk by HA's Pillow before a
model sees it, a file that only claims to be a picture refused, a camera not exposed to
Assist never looked through (even when the model names it, or it is hidden mid-turn).

Real peers: HA with its ``ai_task`` component, media sources and demo camera, the scripted
model server (which records what each model was sent) through the openai SDK, image files
written by Pillow into a real media folder.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from PIL import Image

from custom_components.companion_agent.engine.vision import ImageBounds
from tests.ha.common import (
    CAMERA,
    SetupCompanion,
    agents_by_title,
    ai_task,
    ask,
    generate,
    persona,
    speech,
    task_entity,
)
from tests.support.chat_requests import asked, image_parts, tool_names
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer

TIMEOUT = 10.0
BOUNDS = ImageBounds()
WIDE = (3000, 2000)
"""Six megapixels, four times the bounds' 1.5."""


def write_picture(folder: Path, name: str, size: tuple[int, int]) -> None:
    """Write a PNG of ``size`` (a gradient with noise, so it has detail) to ``folder``."""
    noise = Image.effect_noise(size, 60).convert("RGB")
    gradient = Image.linear_gradient("L").resize(size).convert("RGB")
    Image.blend(noise, gradient, 0.5).save(folder / name, "PNG")


async def media_folder(hass: HomeAssistant, tmp_path: Path) -> Path:
    """Serve ``tmp_path/media`` as HA's local media source (before HA's AI task, which sets
    up the media sources, is); return the folder."""
    folder = tmp_path / "media"
    folder.mkdir()
    hass.config.media_dirs = {"local": str(folder)}
    assert await async_setup_component(hass, "media_source", {})
    return folder


def tool_results(request: dict[str, object]) -> list[dict[str, Any]]:
    """Return the tool messages a request sends."""
    messages = request["messages"]
    assert isinstance(messages, list)
    return [message for message in messages if message["role"] == "tool"]


def attachment(name: str) -> dict[str, str]:
    """Return an AI task attachment of a file in the local media folder."""
    return {
        "media_content_id": f"media-source://media_source/local/{name}",
        "media_content_type": "image/png",
    }


async def test_a_large_attachment_is_shrunk_to_jpeg_within_the_bounds(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion, tmp_path: Path
) -> None:
    """Six megapixels of PNG reach the vision model as a JPEG of at most 1.5, same shape."""
    folder = await media_folder(hass, tmp_path)
    entry = await setup_companion(persona(), ai_task(roles={"vision": {"model": "eyes-7b"}}))
    await hass.async_add_executor_job(write_picture, folder, "porch.png", WIDE)
    llm_server.script(Reply.text("A porch in the evening."))
    data = await generate(
        hass,
        task_entity(hass, entry),
        instructions="Describe it.",
        attachments=[attachment("porch.png")],
    )
    assert data == "A porch in the evening."
    (sent,) = llm_server.requests
    url = sent["messages"][-1]["content"][1]["image_url"]["url"]  # type: ignore[index]
    head, _, encoded = url.partition(",")
    assert head == "data:image/jpeg;base64"
    shrunk = base64.b64decode(encoded)
    assert len(shrunk) <= BOUNDS.max_bytes
    with Image.open(io.BytesIO(shrunk)) as seen:
        assert seen.format == "JPEG"
        width, height = seen.size
    assert width * height <= BOUNDS.max_pixels
    assert width * height > BOUNDS.max_pixels * 0.95  # shrunk to the bounds, not below them
    assert abs(width / height - WIDE[0] / WIDE[1]) < 0.01


async def test_a_file_that_is_not_a_picture_is_refused_and_nothing_is_sent(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion, tmp_path: Path
) -> None:
    """A ``.png`` holding text: a translated error naming why; the model is never asked."""
    folder = await media_folder(hass, tmp_path)
    entry = await setup_companion(persona(), ai_task(roles={"vision": {"model": "eyes-7b"}}))
    (folder / "fake.png").write_bytes(b"\x89PNG not really" + b"\0" * 64)
    with pytest.raises(HomeAssistantError) as caught:
        await generate(
            hass,
            task_entity(hass, entry),
            instructions="Describe it.",
            attachments=[attachment("fake.png")],
        )
    assert caught.value.translation_key == "task_image_refused"
    assert caught.value.translation_placeholders is not None
    assert "not an image that can be read" in caught.value.translation_placeholders["detail"]
    assert not llm_server.requests


async def test_a_camera_not_exposed_is_never_looked_through_even_when_named(
    hass: HomeAssistant, demo_camera: str, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """The model names the demo's PNG camera (not exposed): refused as an argument outside
    the tool's choice of cameras, before any snapshot; no image sent."""
    hidden = "camera.demo_camera_png"
    assert hass.states.get(hidden) is not None
    entry = await setup_companion(
        persona("Ada", llm_apis=[llm.LLM_API_ASSIST], roles={"chat": {"images": "on"}})
    )
    look = json.dumps({"camera": hidden, "question": "who is there?"})
    llm_server.script(
        Reply.tool_calls(("c1", "camera", look)), Reply.text("I cannot see that camera.")
    )
    result = await ask(hass, agents_by_title(hass, entry)["Ada"], "Who is at the back door?")
    assert speech(result) == "I cannot see that camera."
    first, second = llm_server.requests
    assert "camera" in tool_names(first)
    described = json.dumps(first["tools"])
    assert CAMERA in described
    assert hidden not in described
    (tool_result,) = tool_results(second)
    refused = json.loads(tool_result["content"])
    assert refused["error"] == "validation"
    assert f"'{hidden}' is not one of ['{CAMERA}']" in refused["message"]
    assert not image_parts(second)


async def test_a_camera_hidden_while_the_model_decides_is_not_looked_through(
    hass: HomeAssistant, demo_camera: str, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """Offered when the turn began, unexposed before the call comes: the later choice wins."""
    entry = await setup_companion(
        persona("Ada", llm_apis=[llm.LLM_API_ASSIST], roles={"chat": {"images": "on"}})
    )
    decided = asyncio.Event()
    call = Reply.tool_calls(("c1", "camera", json.dumps({"camera": CAMERA})))
    held = (TextChunk("Let me look. "), TextChunk("", hold=decided), *call.chunks)
    llm_server.script(
        Reply(chunks=held, finish_reason="tool_calls"), Reply.text("That camera is private now.")
    )
    turn = asyncio.create_task(ask(hass, agents_by_title(hass, entry)["Ada"], "Who is there?"))
    await asyncio.wait_for(asked(llm_server), TIMEOUT)
    async_expose_entity(hass, "conversation", CAMERA, False)
    decided.set()
    result = await asyncio.wait_for(turn, TIMEOUT)
    assert speech(result).endswith("That camera is private now.")
    first, second = llm_server.requests
    assert "camera" in tool_names(first)
    (tool_result,) = tool_results(second)
    assert "not a camera exposed to Assist" in json.loads(tool_result["content"])["message"]
    assert not image_parts(second)
