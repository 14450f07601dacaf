"""Eyes in a real HA: the camera tool over HA's demo camera, to a chat model that sees or to a
vision model; each model call's tokens and timings in HA's conversation trace.

Real peers: HA with its demo camera (exposed to Assist), the scripted model server (which
records what each model was sent) through the openai SDK.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from homeassistant.components import demo
from homeassistant.components.conversation.trace import async_get_traces
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from tests.ha.common import (
    CAMERA,
    SetupCompanion,
    agents_by_title,
    ask,
    persona,
    speech,
    stored_turns,
)
from tests.support.chat_requests import image_parts, tool_names
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

LOOK = json.dumps({"camera": CAMERA, "question": "who is at the door?"})
DEMO_SNAPSHOTS = {
    (Path(demo.__file__).parent / f"demo_{index}.jpg").read_bytes() for index in range(4)
}


async def test_a_chat_model_that_sees_looks_through_the_demo_camera(
    hass: HomeAssistant, demo_camera: str, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """The snapshot goes to the chat model as an image; the history keeps only a placeholder."""
    entry = await setup_companion(
        persona("Ada", llm_apis=[llm.LLM_API_ASSIST], roles={"chat": {"images": "on"}})
    )
    agent = agents_by_title(hass, entry)["Ada"]
    llm_server.script(
        Reply.tool_calls(("c1", "camera", LOOK)), Reply.text("Nobody is at the door.")
    )
    result = await ask(hass, agent, "Who is at the door?")
    assert speech(result) == "Nobody is at the door."
    first, second = llm_server.requests
    assert "camera" in tool_names(first)
    (sent,) = image_parts(second)
    assert sent in DEMO_SNAPSHOTS  # within the bounds: the camera's own bytes, unchanged
    await hass.config_entries.async_unload(entry.entry_id)
    turns = await hass.async_add_executor_job(stored_turns, hass)
    stored = json.dumps(turns, ensure_ascii=False)
    assert "[image from camera.demo_camera]" in stored
    assert base64.b64encode(sent).decode()[500:600] not in stored


async def test_a_blind_chat_model_hears_the_vision_models_description(
    hass: HomeAssistant, demo_camera: str, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """The vision model sees the snapshot; the chat model gets its words; the trace has both."""
    entry = await setup_companion(
        persona("Ada", llm_apis=[llm.LLM_API_ASSIST], roles={"vision": {"model": "eyes-7b"}})
    )
    agent = agents_by_title(hass, entry)["Ada"]
    llm_server.script(
        Reply.tool_calls(("c1", "camera", LOOK)),
        Reply.text("The porch is empty; a bicycle leans on the wall."),
        Reply.text("Nobody is there, just a bicycle."),
    )
    result = await ask(hass, agent, "Who is at the door?")
    assert speech(result) == "Nobody is there, just a bicycle."
    chat, vision, answer = llm_server.requests
    assert vision["model"] == "eyes-7b"
    assert len(image_parts(vision)) == 1
    assert not image_parts(chat)
    assert not image_parts(answer)
    assert "a bicycle leans on the wall" in answer["messages"][-1]["content"]  # type: ignore[index]
    stats = [
        event["data"]["stats"]
        for event in async_get_traces()[-1].as_dict()["events"]
        if event["event_type"] == "agent_detail" and "stats" in (event["data"] or {})
    ]
    assert [(s["role"], s["model"]) for s in stats] == [
        ("chat", "test-model"),
        ("vision", "eyes-7b"),
        ("chat", "test-model"),
    ]
    for stat in stats:
        assert stat["input_tokens"] > 0
        assert stat["output_tokens"] > 0
        assert stat["total_ms"] >= (stat["first_token_ms"] or 0)


async def test_only_cameras_exposed_to_assist_are_offered(
    hass: HomeAssistant, demo_camera: str, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """A camera not exposed to Assist, or a persona without HA's API: no camera tool."""
    async_expose_entity(hass, "conversation", CAMERA, False)
    entry = await setup_companion(
        persona("Ada", llm_apis=[llm.LLM_API_ASSIST], roles={"chat": {"images": "on"}}),
        persona("Bo", roles={"chat": {"images": "on"}}),
    )
    agents = agents_by_title(hass, entry)
    await ask(hass, agents["Ada"], "Who is at the door?")
    async_expose_entity(hass, "conversation", CAMERA, True)
    await ask(hass, agents["Bo"], "Who is at the door?")
    assert ["camera" in tool_names(request) for request in llm_server.requests] == [False, False]
