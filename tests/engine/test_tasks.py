"""AI tasks through the engine: text and structured answers, images to a model that sees them.

Real peers: the openai SDK against the local streaming server, which records what each
model was sent.
"""

from __future__ import annotations

import json

import pytest

from custom_components.companion_agent.engine import tasks
from custom_components.companion_agent.engine.engine import (
    Engine,
    EngineSettings,
    ModelCall,
    RoleChoice,
    RoleChoices,
    TaskRequest,
)
from custom_components.companion_agent.engine.errors import TaskError
from custom_components.companion_agent.engine.json_types import JSONObject
from custom_components.companion_agent.engine.vision import ImagePart
from tests.engine.common import parts, picture
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

COUNT: JSONObject = {
    "type": "object",
    "properties": {"people": {"type": "integer"}, "parcel": {"type": "boolean"}},
    "required": ["people"],
}
SNAPSHOT = ImagePart(
    mime_type="image/jpeg", data=picture(320, 240), source="media-source://camera/camera.front_door"
)


async def generate(settings: EngineSettings, request: TaskRequest) -> object:
    """Start an engine, run one task, close it; return the task's data."""
    engine = Engine(settings)
    await engine.start()
    try:
        return (await engine.generate(request)).data
    finally:
        await engine.close()


async def test_a_text_task_is_answered_and_timed(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """A task without structure gets the model's text; its call goes to the listener."""
    calls: list[ModelCall] = []
    llm_server.script(Reply.text("  Three lights are on.  "))
    data = await generate(
        settings,
        TaskRequest(
            name="Lights",
            instructions="How many lights are on?",
            roles=RoleChoices(),
            on_model_call=calls.append,
        ),
    )
    assert data == "Three lights are on."
    (sent,) = llm_server.requests
    assert sent["messages"] == [
        {"role": "system", "content": TaskRequest.__dataclass_fields__["system"].default},
        {"role": "user", "content": "How many lights are on?"},
    ]
    (call,) = calls
    assert (call.role, call.model, call.error) == ("task", "test-model", None)
    assert call.prompt_tokens
    assert call.first_token_ms is not None


async def test_a_structured_task_fits_its_schema(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """The schema goes out as ``response_format``; the answer comes back as that object."""
    llm_server.script_structured(Reply.text('```json\n{"people": 2, "parcel": true}\n```'))
    data = await generate(
        settings,
        TaskRequest(
            name="Door count!", instructions="Count people.", roles=RoleChoices(), schema=COUNT
        ),
    )
    assert data == {"people": 2, "parcel": True}
    (sent,) = llm_server.structured_requests
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Door_count", "schema": COUNT},
    }


async def test_an_answer_off_the_schema_is_a_clear_error(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """An answer that does not fit: ``TaskError`` saying so, never a wrong result."""
    llm_server.script_structured(Reply.text('{"people": "two"}'))
    request = TaskRequest(name="n", instructions="Count.", roles=RoleChoices(), schema=COUNT)
    with pytest.raises(TaskError, match="off the schema") as caught:
        await generate(settings, request)
    assert caught.value.reason == "bad_answer"


async def test_images_go_to_the_chat_model_when_it_sees_them(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """A chat model that sees images gets the instructions and the image together."""
    llm_server.script(Reply.text("A person with a parcel."))
    roles = RoleChoices(chat_sees_images=True)
    request = TaskRequest(name="n", instructions="Describe.", roles=roles, images=(SNAPSHOT,))
    assert await generate(settings, request) == "A person with a parcel."
    (sent,) = llm_server.requests
    assert sent["model"] == "test-model"
    assert [part["type"] for part in parts(sent)] == ["text", "image_url"]


async def test_images_go_to_the_vision_model_when_the_chat_model_is_blind(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """Otherwise the vision model answers the task; with none, the task is refused."""
    llm_server.script(Reply.text("An empty porch."))
    roles = RoleChoices(vision=RoleChoice(model="eyes-7b"))
    request = TaskRequest(name="n", instructions="Describe.", roles=roles, images=(SNAPSHOT,))
    assert await generate(settings, request) == "An empty porch."
    assert llm_server.requests[0]["model"] == "eyes-7b"
    blind = TaskRequest(name="n", instructions="Describe.", roles=RoleChoices(), images=(SNAPSHOT,))
    with pytest.raises(TaskError, match="does not see images") as caught:
        await generate(settings, blind)
    assert caught.value.reason == "no_vision"
    assert len(llm_server.requests) == 1


async def test_a_model_that_fails_is_a_clear_error(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """The server answers HTTP 500: ``TaskError`` (unreachable), with what the server said."""
    llm_server.script(Reply.error(500))
    request = TaskRequest(name="n", instructions="Hi.", roles=RoleChoices())
    with pytest.raises(TaskError, match="HTTP 500") as caught:
        await generate(settings, request)
    assert caught.value.reason == "unreachable"


async def test_a_text_answer_cut_at_the_length_limit_is_an_error(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """``finish_reason: length``: ``TaskError`` (cut), never the part that came."""
    llm_server.script(Reply(chunks=Reply.text("Hall, kitch").chunks, finish_reason="length"))
    request = TaskRequest(name="n", instructions="List.", roles=RoleChoices())
    with pytest.raises(TaskError, match="length limit") as caught:
        await generate(settings, request)
    assert caught.value.reason == "cut"


async def test_a_text_answer_whose_stream_broke_off_is_cut_not_unreachable(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """The server drops the connection after the answer began: the answer was cut."""
    llm_server.script(Reply(chunks=Reply.text("The hall light and the").chunks, cut_after=3))
    request = TaskRequest(name="n", instructions="List.", roles=RoleChoices())
    with pytest.raises(TaskError, match="cut") as caught:
        await generate(settings, request)
    assert caught.value.reason == "cut"


async def test_a_text_answer_longer_than_a_task_takes_is_an_error_not_shortened(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """One character past ``MAX_TEXT_CHARS``: ``TaskError`` (too_long); exactly as many
    characters: the whole answer."""
    words = "".join(f"Lamp {n} glows in room {n * 7 % 101}. " for n in range(800))
    fits = words[: tasks.MAX_TEXT_CHARS - 1] + "."
    llm_server.script(Reply.text(fits, chunk_size=500), Reply.text(fits + "!", chunk_size=500))
    request = TaskRequest(name="n", instructions="Describe.", roles=RoleChoices())
    assert await generate(settings, request) == fits
    with pytest.raises(TaskError, match="longer than 20000 characters") as caught:
        await generate(settings, request)
    assert caught.value.reason == "too_long"


WHEN: JSONObject = {
    "type": "object",
    "properties": {
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "time": {"type": "string", "format": "time"},
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("answer", "fits"),
    [
        ({"day": "2026-03-10", "at": "2026-03-10 07:30", "time": "07:30"}, True),
        ({"at": "2026-03-10T07:30:00+01:00", "time": "07:30:15"}, True),
        ({"day": "next Tuesday"}, False),
        ({"day": "2026-02-30"}, False),
        ({"at": "tomorrow morning"}, False),
        ({"time": "7pm"}, False),
    ],
)
async def test_an_answers_formats_are_asserted(
    llm_server: LLMServer, settings: EngineSettings, answer: JSONObject, fits: bool
) -> None:
    """``date`` as ``YYYY-MM-DD``; ``date-time`` and ``time`` as ISO 8601, the way HA's
    selectors read them (no time zone needed)."""
    llm_server.script_structured(Reply.text(json.dumps(answer)))
    request = TaskRequest(name="n", instructions="When?", roles=RoleChoices(), schema=WHEN)
    if fits:
        assert await generate(settings, request) == answer
        return
    with pytest.raises(TaskError, match="is not a") as caught:
        await generate(settings, request)
    assert caught.value.reason == "bad_answer"
