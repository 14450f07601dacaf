"""HA's AI task through the companion's models: its form, text, structure, camera attachments,
refusals.

Real peers: HA with its ``ai_task`` component, media sources and demo camera, the scripted
model server (which records what each model was sent) through the openai SDK.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from unittest.mock import patch

import pytest
from homeassistant import config_entries
from homeassistant.components import ai_task as ai_task_component
from homeassistant.components.ai_task import AITaskEntityFeature
from homeassistant.components.conversation.trace import async_get_traces
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import CONF_NAME, Platform
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_MODEL,
    DEFAULT_AI_TASK_NAME,
    SUBENTRY_AI_TASK,
)
from tests.ha.common import (
    CAMERA,
    SetupCompanion,
    ai_task,
    async_load,
    companion_entry,
    generate,
    persona,
    task_entity,
)
from tests.support.chat_requests import messages
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

SNAPSHOT = {
    "media_content_id": f"media-source://camera/{CAMERA}",
    "media_content_type": "image/jpeg",
}


async def test_a_task_without_attachments_answers_in_text_with_a_trace(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """The task's words reach the entry's model; the answer is the data; the trace has its call."""
    entry = await setup_companion(persona(), ai_task())
    llm_server.script(Reply.text("Two lights are on."))
    data = await generate(hass, task_entity(hass, entry), instructions="How many lights are on?")
    assert data == "Two lights are on."
    (sent,) = llm_server.requests
    assert sent["messages"][-1] == {"role": "user", "content": "How many lights are on?"}  # type: ignore[index]
    events = async_get_traces()[-1].as_dict()["events"]
    assert events[0]["data"]["task_name"] == "Front door"
    (stats,) = [e["data"]["stats"] for e in events if "stats" in (e["data"] or {})]
    assert (stats["role"], stats["model"]) == ("task", "test-model")
    assert stats["input_tokens"] > 0
    assert stats["output_tokens"] > 0


async def test_a_structured_task_gets_the_structure_as_a_json_schema(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """HA's structure (selectors) becomes the schema the answer must fit, and the data."""
    entry = await setup_companion(persona(), ai_task())
    llm_server.script_structured(Reply.text('{"people": 2, "parcel": true}'))
    structure = {
        "people": {"selector": {"number": {}}, "required": True, "description": "How many"},
        "parcel": {"selector": {"boolean": {}}},
    }
    data = await generate(
        hass, task_entity(hass, entry), instructions="Count people.", structure=structure
    )
    assert data == {"people": 2, "parcel": True}
    (sent,) = llm_server.structured_requests
    schema = sent["response_format"]["json_schema"]["schema"]  # type: ignore[index]
    assert schema["required"] == ["people"]
    assert schema["properties"]["people"]["type"] == "number"
    assert schema["properties"]["parcel"]["type"] == "boolean"


async def test_a_camera_attachment_goes_to_the_vision_model(
    hass: HomeAssistant, demo_camera: str, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """A snapshot attached by media source reaches the vision model as an image part."""
    entry = await setup_companion(persona(), ai_task(roles={"vision": {"model": "eyes-7b"}}))
    llm_server.script(Reply.text("An empty porch."))
    data = await generate(
        hass, task_entity(hass, entry), instructions="Describe the porch.", attachments=[SNAPSHOT]
    )
    assert data == "An empty porch."
    (sent,) = llm_server.requests
    assert sent["model"] == "eyes-7b"
    content = sent["messages"][-1]["content"]  # type: ignore[index]
    assert content[0] == {"type": "text", "text": "Describe the porch."}
    head, _, encoded = content[1]["image_url"]["url"].partition(",")
    assert head == "data:image/jpeg;base64"
    assert base64.b64decode(encoded)[:3] == b"\xff\xd8\xff"


async def test_attachments_are_refused_clearly(
    hass: HomeAssistant,
    demo_camera: str,
    llm_server: LLMServer,
    setup_companion: SetupCompanion,
    tmp_path: Path,
) -> None:
    """A task that cannot see refuses images; one that can refuses anything but an image."""
    entry = await setup_companion(
        persona(), ai_task("Blind"), ai_task("Seeing", roles={"chat": {"images": "on"}})
    )
    registry = er.async_get(hass)
    blind, seeing = (
        registry.async_get_entity_id("ai_task", "companion_agent", sub.subentry_id)
        for sub in sorted(entry.subentries.values(), key=lambda sub: sub.title)
        if sub.subentry_type == "ai_task_data"
    )
    assert blind is not None
    assert seeing is not None
    with pytest.raises(HomeAssistantError, match="does not support attachments"):
        await generate(hass, blind, instructions="Look.", attachments=[SNAPSHOT])
    media = tmp_path / "media"
    media.mkdir()
    (media / "notes.txt").write_text("not a picture", encoding="utf-8")
    hass.config.media_dirs = {"local": str(media)}
    assert await async_setup_component(hass, "media_source", {})
    note = {
        "media_content_id": "media-source://media_source/local/notes.txt",
        "media_content_type": "text/plain",
    }
    with pytest.raises(HomeAssistantError) as caught:
        await generate(hass, seeing, instructions="Read it.", attachments=[note])
    assert caught.value.translation_key == "task_attachment_not_image"
    assert not llm_server.requests


async def test_a_chat_model_that_sees_answers_a_structured_task_about_a_snapshot(
    hass: HomeAssistant, demo_camera: str, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """Structure and a camera attachment together: one structured request, image included."""
    entry = await setup_companion(persona(), ai_task(roles={"chat": {"images": "on"}}))
    llm_server.script_structured(Reply.text('{"people": 0}'))
    structure = {"people": {"selector": {"number": {}}, "required": True}}
    data = await generate(
        hass,
        task_entity(hass, entry),
        instructions="How many people are on the porch?",
        structure=structure,
        attachments=[SNAPSHOT],
    )
    assert data == {"people": 0}
    assert not llm_server.requests
    (sent,) = llm_server.structured_requests
    assert sent["model"] == "test-model"
    content = sent["messages"][-1]["content"]  # type: ignore[index]
    assert content[0]["text"] == "How many people are on the porch?"
    assert content[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")


async def test_an_answer_that_does_not_fit_the_structure_is_an_error_not_data(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """A model that keeps answering off the schema: a translated error, never a wrong result."""
    entry = await setup_companion(persona(), ai_task())
    llm_server.script_structured(*[Reply.text('{"people": "several"}')] * 4)
    structure = {"people": {"selector": {"number": {}}, "required": True}}
    with pytest.raises(HomeAssistantError) as caught:
        await generate(
            hass, task_entity(hass, entry), instructions="Count people.", structure=structure
        )
    assert caught.value.translation_key == "task_bad_answer"
    assert llm_server.structured_requests


async def test_an_ai_task_added_by_its_form_can_see_through_its_vision_model(
    hass: HomeAssistant, demo_camera: str, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """An entry with no AI task (as one made before them): the form adds one, checks its
    vision model live, and the new entity takes attachments to that model."""
    entry = await setup_companion(persona())
    assert not [s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_AI_TASK]
    flow = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_AI_TASK), context={"source": config_entries.SOURCE_USER}
    )
    assert flow["step_id"] == "set_options"
    chosen = {CONF_NAME: "Porch", "vision": {CONF_MODEL: "eyes-7b"}}
    wrong = await hass.config_entries.subentries.async_configure(flow["flow_id"], chosen)
    assert wrong["errors"] == {"base": "vision_model_not_found"}
    llm_server.models = ("test-model", "eyes-7b")
    done = await hass.config_entries.subentries.async_configure(flow["flow_id"], chosen)
    assert done["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    entity_id = task_entity(hass, entry)
    state = hass.states.get(entity_id)
    assert state is not None
    features = state.attributes["supported_features"]
    assert features & AITaskEntityFeature.SUPPORT_ATTACHMENTS
    llm_server.script(Reply.text("A quiet porch."))
    data = await generate(hass, entity_id, instructions="Describe.", attachments=[SNAPSHOT])
    assert data == "A quiet porch."
    assert [request["model"] for request in llm_server.requests] == ["eyes-7b"]


async def test_an_entry_made_before_ai_tasks_gets_one_when_it_migrates(
    hass: HomeAssistant, llm_server: LLMServer
) -> None:
    """Minor version 1 (a persona only) gains one AI task sub-entry and entity, once."""
    entry = await async_load(hass, companion_entry(llm_server.url, persona(), minor_version=1))
    assert entry.minor_version == 2
    tasks = [s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_AI_TASK]
    assert [task.title for task in tasks] == [DEFAULT_AI_TASK_NAME]
    assert hass.states.get(task_entity(hass, entry)) is not None
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    assert len([s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_AI_TASK]) == 1


async def test_a_task_with_an_llm_api_turns_on_a_light_and_holds_an_unlock(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """A task carrying HA's Assist API calls its tools through the guard (HA 2025.9 on)."""
    with (
        patch("homeassistant.components.demo.lock.LOCK_UNLOCK_DELAY", 0),
        patch(
            "homeassistant.components.demo.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM",
            [Platform.LIGHT, Platform.LOCK],
        ),
    ):
        assert await async_setup_component(hass, "conversation", {})
        await async_load(hass, MockConfigEntry(domain="demo"))
    for exposed in ("light.bed_light", "lock.front_door"):
        async_expose_entity(hass, ai_task_component.DOMAIN, exposed, True)
    entry = await setup_companion(persona(), ai_task())
    [assist] = [api for api in llm.async_get_apis(hass) if api.id == llm.LLM_API_ASSIST]
    llm_server.script(
        Reply.tool_calls(
            ("call_on", "HassTurnOn", '{"name": "Bed Light"}'),
            ("call_unlock", "HassTurnOff", '{"name": "Front Door", "domain": ["lock"]}'),
        ),
        Reply.text("The bed light is on; the door waits for a yes."),
    )
    result = await ai_task_component.async_generate_data(
        hass,
        task_name="Evening",
        entity_id=task_entity(hass, entry),
        instructions="Turn on the bed light and unlock the front door",
        llm_api=assist,
    )
    assert result.data == "The bed light is on; the door waits for a yes."
    assert hass.states.get("light.bed_light").state == "on"  # type: ignore[union-attr]
    assert hass.states.get("lock.front_door").state == "locked"  # type: ignore[union-attr]
    [held] = entry.runtime_data.engine.pending_confirmations()
    assert held.request.name == "HassTurnOff"
    told = [m for m in messages(llm_server.requests[1]) if m.get("role") == "tool"]
    assert "pending_confirmation" in str(told[1]["content"])


CHECKED_STRUCTURE = {
    "when": {"selector": {"date": {}}, "required": True},
    "light": {"selector": {"entity": {"filter": {"domain": "light"}}}},
    "lamp": {"selector": {"entity": {"domain": "light"}}},
    "switch": {"selector": {"entity": {"exclude_entities": ["switch.decorative_lights"]}}},
}
WRONG_ANSWERS = (
    ({"when": "next Tuesday"}, "when"),  # not a date
    ({"when": "2026-03-10", "light": "lock.front_door"}, "light"),  # filtered to lights
    ({"when": "2026-03-10", "lamp": "lock.front_door"}, "lamp"),  # legacy domain
    ({"when": "2026-03-10", "also_unlock": True}, "also_unlock"),  # not in the structure
    ({"when": "2026-03-10", "switch": "switch.decorative_lights"}, "switch"),  # excluded
    ({"when": "2026-03-10", "switch": "Decorative Lights"}, "switch"),  # a name, not an id
)


async def test_an_answer_is_held_to_its_structure_and_the_structures_own_schema(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """A date that is no date, an entity outside the selector's domains (``filter`` or
    legacy ``domain``), a field the structure does not have, an excluded entity, a name
    for an id: each is a translated error naming the field, never data. The schema sent
    says what it can (closed object, date format, the domains' pattern); the structure's
    own schema checks the rest, as HA checks a service's data."""
    entry = await setup_companion(persona(), ai_task())
    entity_id = task_entity(hass, entry)
    for answer, field in WRONG_ANSWERS:
        llm_server.script_structured(Reply.text(json.dumps(answer)))
        with pytest.raises(HomeAssistantError) as caught:
            await generate(hass, entity_id, instructions="Plan it.", structure=CHECKED_STRUCTURE)
        assert caught.value.translation_key == "task_bad_answer", answer
        assert field in str(caught.value), (answer, str(caught.value))
    right = {"when": "2026-03-10", "light": "light.bed_light", "switch": "switch.ac"}
    llm_server.script_structured(Reply.text(json.dumps(right)))
    data = await generate(hass, entity_id, instructions="Plan it.", structure=CHECKED_STRUCTURE)
    assert data == right
    assert len(llm_server.structured_requests) == len(WRONG_ANSWERS) + 1
    schema = llm_server.structured_requests[-1]["response_format"]["json_schema"]["schema"]  # type: ignore[index]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["when"]["format"] == "date"
    assert schema["properties"]["light"]["pattern"] == r"^(?:light)\.[a-z0-9_]+$"
    assert schema["properties"]["lamp"]["pattern"] == r"^(?:light)\.[a-z0-9_]+$"
    assert "pattern" not in schema["properties"]["switch"]


def with_finish(reply: Reply, finish_reason: str) -> Reply:
    """Return ``reply`` ended with ``finish_reason``."""
    return Reply(chunks=reply.chunks, finish_reason=finish_reason)


async def test_a_text_answer_that_was_cut_or_is_too_long_is_an_error_not_data(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """The server ends an answer with ``finish_reason: length``: a translated error that
    says it was cut. A 66,008-character answer: an error that says it is too long, never
    the first 20,000 characters of it."""
    entry = await setup_companion(persona(), ai_task())
    entity_id = task_entity(hass, entry)
    llm_server.script(with_finish(Reply.text("The lights in the hall, the kitch"), "length"))
    with pytest.raises(HomeAssistantError) as caught:
        await generate(hass, entity_id, instructions="List every light.")
    assert caught.value.translation_key == "task_cut"
    assert "cut off" in str(caught.value)
    long = "".join(f"Light {n} is in room {n * 7 % 101}. " for n in range(4000))[:66_008]
    llm_server.script(Reply.text(long, chunk_size=1000))
    with pytest.raises(HomeAssistantError) as caught:
        await generate(hass, entity_id, instructions="Describe every light at length.")
    assert caught.value.translation_key == "task_too_long"
    assert "too long" in str(caught.value)
    assert "20000 characters" in str(caught.value)


async def test_a_structured_answer_cut_at_the_length_limit_says_so(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """A structured answer the server cut: the error says cut, not off the structure."""
    entry = await setup_companion(persona(), ai_task())
    llm_server.script_structured(with_finish(Reply.text('{"people": 2}'), "length"))
    structure = {"people": {"selector": {"number": {}}, "required": True}}
    with pytest.raises(HomeAssistantError) as caught:
        await generate(
            hass, task_entity(hass, entry), instructions="Count people.", structure=structure
        )
    assert caught.value.translation_key == "task_cut"


async def test_a_task_with_an_llm_api_whose_answer_was_cut_is_an_error(
    hass: HomeAssistant, llm_server: LLMServer, setup_companion: SetupCompanion
) -> None:
    """Through the tool loop too: the last round ended at the length limit."""
    assert await async_setup_component(hass, "conversation", {})
    entry = await setup_companion(persona(), ai_task())
    [assist] = [api for api in llm.async_get_apis(hass) if api.id == llm.LLM_API_ASSIST]
    llm_server.script(with_finish(Reply.text("Every light: the hall, the kit"), "length"))
    with pytest.raises(HomeAssistantError) as caught:
        await ai_task_component.async_generate_data(
            hass,
            task_name="Evening",
            entity_id=task_entity(hass, entry),
            instructions="List every light",
            llm_api=assist,
        )
    assert caught.value.translation_key == "task_cut"
