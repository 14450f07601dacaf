"""The camera tool in whole engine turns: to a chat model that sees, or described for one.

Real peers: the openai SDK against the local streaming server (which records what each
model was sent), the engine's conversation, audit and memory files in a temporary folder.
The host's part, the camera, is ``FrontDoor`` below: it hands over a real JPEG.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path

from custom_components.companion_agent.engine.engine import (
    Engine,
    EngineSettings,
    ModelCall,
    RoleChoice,
    RoleChoices,
)
from custom_components.companion_agent.engine.events import SentenceOutput
from custom_components.companion_agent.engine.memory.backends import MemoryConfig
from custom_components.companion_agent.engine.messages import ToolCallRequest
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolOutcome
from custom_components.companion_agent.engine.tools.registry import Tool, ToolRegistry
from custom_components.companion_agent.engine.vision import (
    Camera,
    ImageBounds,
    ImagePart,
    VisionSummarizer,
    camera_tool,
)
from tests.engine.common import ask, finish, messages_of, parts, picture
from tests.engine.plugins.samples import write_profile
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

DOOR = "camera.front_door"
LOOK = json.dumps({"camera": DOOR, "question": "who is at the door?"})


@dataclass
class FrontDoor:
    """The host's camera: one exposed camera whose snapshot is a real JPEG."""

    image: bytes = field(default_factory=lambda: picture(640, 480))
    delay: float = 0.0
    taken: int = 0

    def cameras(self) -> Sequence[Camera]:
        """Return the one camera."""
        return [Camera(camera_id=DOOR, name="Front door")]

    async def snapshot(self, camera_id: str, bounds: ImageBounds) -> ImagePart:
        """Hand over the JPEG (after ``delay``)."""
        self.taken += 1
        await asyncio.sleep(self.delay)
        return ImagePart(mime_type="image/jpeg", data=self.image, source=camera_id)


async def look(tool: Tool | None) -> ToolOutcome:
    """Call the camera tool once through a registry, as a turn would."""
    assert tool is not None
    call = ToolCallRequest(call_id="c1", name="camera", arguments=LOOK)
    return await ToolRegistry([tool]).execute(call, ToolContext(conversation_id="c"))


def everything_written(folder: Path) -> bytes:
    """Return the bytes of every file the engine wrote under ``folder`` (databases too)."""
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


async def test_a_chat_model_that_sees_gets_the_snapshot_and_nothing_keeps_it(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """The image follows the tool result as an image part; files, memory and audit never hold it."""
    engine = Engine(replace_memory(settings))
    await engine.start()
    persona = engine.persona("p1", "default", RoleChoices(chat_sees_images=True))
    door = FrontDoor()
    llm_server.script(
        Reply.tool_calls(("c1", "camera", LOOK)), Reply.text("A courier is at the door.")
    )
    text, result = await finish(
        engine.start_turn(ask(persona, "Who is at the door?", host_cameras=door))
    )
    await engine.close()
    assert (text, result.outcome, door.taken) == ("A courier is at the door.", "complete", 1)
    offered = [tool["function"] for tool in llm_server.requests[0]["tools"]]  # type: ignore[attr-defined]
    camera = next(tool for tool in offered if tool["name"] == "camera")
    assert camera["parameters"]["properties"]["camera"]["enum"] == [DOOR]
    assert "camera.front_door (Front door)" in camera["description"]
    encoded = base64.b64encode(door.image).decode()
    url = {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{encoded}"}}
    assert url in parts(llm_server.requests[1])
    roles = [m["role"] for m in messages_of(llm_server.requests[1])]
    assert roles[-3:] == ["assistant", "tool", "user"]
    written = everything_written(settings.data_dir)
    assert encoded[1000:1100].encode() not in written
    assert door.image[1000:1100] not in written
    with closing(sqlite3.connect(settings.data_dir / "exchanges.db")) as db:
        rows = db.execute("SELECT turn FROM exchanges WHERE persona = 'p1'").fetchall()
    assert "[image from camera.front_door]" in "".join(raw for (raw,) in rows)


async def test_a_chat_model_that_cannot_see_gets_the_vision_models_description(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """The vision model gets the image and the question; the chat model only the description."""
    engine = Engine(settings)
    await engine.start()
    persona = engine.persona("p1", "default", RoleChoices(vision=RoleChoice(model="eyes-7b")))
    calls: list[ModelCall] = []
    llm_server.script(
        Reply.tool_calls(("c1", "camera", LOOK)),
        Reply.text("A person in a yellow jacket holds a parcel at the front door."),
        Reply.text("Someone with a parcel is at the door."),
    )
    request = ask(
        persona, "Who is at the door?", host_cameras=FrontDoor(), on_model_call=calls.append
    )
    text, _result = await finish(engine.start_turn(request))
    await engine.close()
    chat, vision, answer = llm_server.requests
    assert (chat["model"], vision["model"], answer["model"]) == (
        "test-model",
        "eyes-7b",
        "test-model",
    )
    assert "tools" not in vision
    assert [part["type"] for part in parts(vision)] == ["text", "image_url"]
    assert parts(vision)[0]["text"] == "who is at the door?"
    assert not [part for request in (chat, answer) for part in parts(request)]
    result = json.loads(answer["messages"][-1]["content"])  # type: ignore[index]
    assert result["description"].startswith("A person in a yellow jacket")
    assert text == "Someone with a parcel is at the door."
    assert [(call.role, call.model) for call in calls] == [
        ("chat", "test-model"),
        ("vision", "eyes-7b"),
        ("chat", "test-model"),
    ]
    for call in calls:
        assert call.prompt_tokens
        assert call.completion_tokens
        assert call.error is None
    assert calls[0].first_token_ms is None  # it only called a tool: no text came
    for call in calls[1:]:
        assert call.first_token_ms is not None
        assert 0 <= call.first_token_ms <= call.total_ms


async def test_a_persona_that_cannot_see_is_offered_no_camera(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """No vision model and a chat model that does not see: no camera tool, however many cameras."""
    engine = Engine(settings)
    await engine.start()
    persona = engine.persona("p1", "default")
    await finish(engine.start_turn(ask(persona, "Who is at the door?", host_cameras=FrontDoor())))
    await engine.close()
    offered = [tool["function"]["name"] for tool in llm_server.requests[0].get("tools", [])]  # type: ignore[attr-defined]
    assert "camera" not in offered


async def test_a_slow_snapshot_is_a_clear_error_and_is_not_tried_again() -> None:
    """A camera slower than the snapshot wait: a retryable error for the model, one try only."""
    door = FrontDoor(delay=1.0)
    tool = camera_tool(door, sees_images=True, summarizer=None, snapshot_timeout=0.05)
    outcome = await look(tool)
    error = json.loads(outcome.content)
    assert error == {
        "error": "dependency",
        "message": "the camera camera.front_door gave no snapshot within 0.05 s",
        "retryable": True,
    }
    assert door.taken == 1


async def test_an_image_over_the_bounds_is_refused_not_sent(llm_server: LLMServer) -> None:
    """A snapshot the host could not shrink below the bounds never reaches a model."""
    door = FrontDoor(image=picture(2000, 1500, "PNG"))
    tool = camera_tool(
        door, sees_images=True, summarizer=None, bounds=ImageBounds(max_pixels=10_000)
    )
    outcome = await look(tool)
    assert json.loads(outcome.content)["error"] == "execution"
    assert "2000x1500 pixels" in json.loads(outcome.content)["message"]
    assert not llm_server.requests


async def test_a_vision_model_that_fails_is_a_clear_error(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """The vision model's server refuses: the camera call fails with what happened, retryable."""
    engine = Engine(settings)
    await engine.start()
    persona = engine.persona("p1", "default", RoleChoices(vision=RoleChoice(model="eyes-7b")))
    assert persona.vision is not None
    llm_server.script(Reply.error(500))
    tool = camera_tool(FrontDoor(), sees_images=False, summarizer=VisionSummarizer(persona.vision))
    outcome = await look(tool)
    await engine.close()
    error = json.loads(outcome.content)
    assert (error["error"], error["retryable"]) == ("dependency", True)
    assert error["message"].startswith("the vision model could not describe camera.front_door")


def replace_memory(settings: EngineSettings) -> EngineSettings:
    """Return ``settings`` with the embedded memory store (and its outbox) on."""
    return replace(settings, memory=MemoryConfig(environment="test"))


async def test_a_profile_may_hold_the_camera_for_a_yes(
    llm_server: LLMServer, settings: EngineSettings, tmp_path: Path
) -> None:
    """``[policy] camera = "confirm"``: the snapshot waits for the person; nothing is taken."""
    write_profile(
        tmp_path / "user",
        "careful",
        """
        [models]
        chat_images = true
        [policy]
        "camera" = "confirm"
        """,
    )
    engine = Engine(settings)
    await engine.start()
    door = FrontDoor()
    llm_server.script(Reply.tool_calls(("c1", "camera", LOOK)), Reply.text("Shall I look?"))
    persona = engine.persona("p1", "careful")
    _text, result = await finish(
        engine.start_turn(ask(persona, "Who is at the door?", host_cameras=door))
    )
    await engine.close()
    assert [call.status for call in result.tool_calls] == ["pending_confirmation"]
    assert door.taken == 0


@dataclass
class SlowFrontDoor(FrontDoor):
    """The front door's camera, whose snapshot comes once the turn has said something."""

    said: asyncio.Event = field(default_factory=asyncio.Event)

    async def snapshot(self, camera_id: str, bounds: ImageBounds) -> ImagePart:
        """Hand over the JPEG once a sentence has been said (5 s at most)."""
        async with asyncio.timeout(5):
            await self.said.wait()
        return await super().snapshot(camera_id, bounds)


async def test_a_slow_snapshot_is_bridged_by_a_line_naming_the_camera(
    llm_server: LLMServer, settings: EngineSettings, tmp_path: Path
) -> None:
    """While the camera is slow the persona says it is looking, by the camera's own name."""
    write_profile(
        tmp_path / "user",
        "watcher",
        """
        [models]
        chat_images = true
        [holding]
        after = 0.2
        [holding.en]
        camera = "One moment, I'm looking at the {target}."
        camera_any = "One moment, I'm looking at the camera."
        """,
    )
    engine = Engine(settings)
    await engine.start()
    door = SlowFrontDoor()
    llm_server.script(
        Reply.tool_calls(("c1", "camera", LOOK)), Reply.text("A courier is at the door.")
    )
    turn = engine.start_turn(
        ask(engine.persona("p1", "watcher"), "Who is at the door?", host_cameras=door)
    )
    spoken = []
    async for item in turn.items():
        if isinstance(item, SentenceOutput):
            spoken.append(item.tts_text)
            door.said.set()
    result = await turn.result
    await engine.close()
    assert (
        " ".join(spoken) == "One moment, I'm looking at the Front door. A courier is at the door."
    )
    assert result.shown == "One moment, I'm looking at the Front door.\nA courier is at the door."
    assert door.taken == 1
