"""A model per role: the host's choice, the profile's name, the host's model, in that order.

Whole turns run against two real local servers (the host's, and a role's own with its own
key), through the openai SDK, with the embedded memory in a temporary folder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.engine import (
    Engine,
    EngineSettings,
    PersonaSetup,
    RoleChoice,
    RoleChoices,
)
from custom_components.companion_agent.engine.llm import LLMSettings
from custom_components.companion_agent.engine.llm.roles import (
    BackgroundModels,
    ModelChoice,
    persona_models,
)
from custom_components.companion_agent.engine.memory.backends import MemoryConfig
from tests.engine.common import ask, finish
from tests.engine.plugins.samples import write_profile
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

HOST = LLMSettings(base_url="http://host:11434/v1", model="host-7b", api_key="host-key")


@pytest.fixture
async def own_server(socket_enabled: None) -> AsyncIterator[LLMServer]:
    """Run a second model server, one that wants its own API key."""
    async with LLMServer(api_key="role-key") as server:
        yield server


def test_an_empty_choice_keeps_the_profiles_name_on_the_hosts_server() -> None:
    """Nothing chosen: the profile names the model, the host gives server, key and waits."""
    models = persona_models(HOST, RoleChoices(), ModelChoice(chat="qwen2.5:7b"))
    assert (models.chat.base_url, models.chat.model, models.chat.api_key) == (
        HOST.base_url,
        "qwen2.5:7b",
        "host-key",
    )
    assert models.chat.first_token_timeout == HOST.first_token_timeout
    assert models.vision is None
    assert (models.memory.model, models.memory.first_token_timeout) == ("host-7b", 30.0)
    assert models.summary == models.memory


def test_a_role_on_its_own_server_never_gets_the_hosts_key() -> None:
    """Another server: its own key or none; the host's server: the host's key unless given."""
    own = RoleChoice(base_url="http://gpu:8000/v1", model="big-70b", temperature=0.2)
    models = persona_models(HOST, RoleChoices(chat=own), ModelChoice(chat="ignored"))
    assert (models.chat.base_url, models.chat.model, models.chat.api_key) == (
        "http://gpu:8000/v1",
        "big-70b",
        None,
    )
    assert models.chat.temperature == 0.2
    same = RoleChoice(base_url="http://host:11434/v1/", max_tokens=256)
    assert persona_models(HOST, RoleChoices(chat=same), ModelChoice()).chat.api_key == "host-key"


def test_vision_exists_only_when_a_model_is_named_and_summaries_follow_memory() -> None:
    """A vision model from the choice or the profile; summaries on the memory role's model."""
    memory = RoleChoice(base_url="http://cpu:8080/v1", model="small-3b", api_key="k")
    choices = RoleChoices(memory=memory, chat_sees_images=None)
    models = persona_models(HOST, choices, ModelChoice(vision="eyes-7b", chat_images=True))
    assert models.vision is not None
    assert (models.vision.model, models.vision.first_token_timeout) == ("eyes-7b", 20.0)
    assert models.chat_sees_images
    assert (models.summary.base_url, models.summary.model, models.summary.api_key) == (
        "http://cpu:8080/v1",
        "small-3b",
        "k",
    )
    told = persona_models(HOST, RoleChoices(chat_sees_images=False), ModelChoice(chat_images=True))
    assert not told.chat_sees_images


def test_memory_keys_name_a_personas_models_without_secrets() -> None:
    """A bound persona's key finds its roles; an unknown persona, the host; a name, that model."""
    background = BackgroundModels(HOST)
    models = persona_models(
        HOST, RoleChoices(memory=RoleChoice(model="memo-3b", api_key="secret")), ModelChoice()
    )
    key = background.bind("01JPERSONA", models)
    assert key == "persona:01JPERSONA"
    assert "secret" not in key
    assert background.settings(key, "memory").model == "memo-3b"
    assert background.settings("persona:gone", "summary").model == "host-7b"
    assert background.settings("qwen2.5:3b", "memory").model == "qwen2.5:3b"
    assert background.settings(None, "memory").model == "host-7b"
    shown = background.redacted_settings()["01JPERSONA"]
    assert isinstance(shown, dict)
    assert "secret" not in repr(shown)


async def test_each_role_reaches_its_own_server_and_model(
    llm_server: LLMServer, own_server: LLMServer, settings: EngineSettings, tmp_path: Path
) -> None:
    """Chat on the role's server with its key; extraction and summaries on the memory model."""
    engine = Engine(replace(settings, memory=MemoryConfig(environment="test")))
    await engine.start()
    roles = RoleChoices(
        chat=RoleChoice(
            base_url=own_server.url,
            api_key="role-key",
            model="big-70b",
            temperature=0.3,
            max_tokens=64,
        ),
        memory=RoleChoice(model="memo-3b"),
    )
    persona = engine.persona("p1", "default", roles)
    own_server.script(Reply.text("Hello from the big model."))
    text, result = await finish(engine.start_turn(ask(persona, "Hi there, I like tea.")))
    assert engine.memory is not None
    assert await engine.memory.wait_idle(5)
    await engine.close()
    assert (text, result.outcome) == ("Hello from the big model.", "complete")
    (sent,) = own_server.requests
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("big-70b", 0.3, 64)
    assert not llm_server.requests  # no chat on the host's server
    assert llm_server.structured_requests
    assert {body["model"] for body in llm_server.structured_requests} == {"memo-3b"}


async def test_summaries_are_written_by_the_summary_model_and_facts_by_the_memory_model(
    llm_server: LLMServer, settings: EngineSettings
) -> None:
    """A window that overflows is summarised by the persona's summary role, not its memory's."""
    limits = replace(settings.limits, history_tokens=120)
    engine = Engine(replace(settings, memory=MemoryConfig(environment="test"), limits=limits))
    await engine.start()
    roles = RoleChoices(memory=RoleChoice(model="memo-3b"), summary=RoleChoice(model="sum-1b"))
    persona = engine.persona("p1", "default", roles)
    for index in range(6):
        llm_server.script(Reply.text(f"Answer {index}: " + "tea and biscuits " * 12))
        await finish(engine.start_turn(ask(persona, f"Question {index}: " + "garden " * 20)))
    assert engine.memory is not None
    assert await engine.memory.wait_idle(10)
    await engine.close()
    by_schema = {
        (body["response_format"]["json_schema"]["name"], body["model"])  # type: ignore[index]
        for body in llm_server.structured_requests
    }
    assert by_schema == {("memory_extraction", "memo-3b"), ("session_summary", "sum-1b")}


async def test_personas_known_at_start_have_their_memory_models_bound_before_work_drains(
    settings: EngineSettings,
) -> None:
    """Queued work from before a restart finds the persona's memory model at once."""
    roles = RoleChoices(memory=RoleChoice(model="memo-3b"), summary=RoleChoice(model="sum-1b"))
    engine = Engine(
        replace(settings, personas={"p1": PersonaSetup(profile_id="default", roles=roles)})
    )
    await engine.start()
    figures = await engine.diagnostics()
    await engine.close()
    models = figures["models"]
    assert isinstance(models, dict)
    assert models["p1"]["memory"]["model"] == "memo-3b"
    assert models["p1"]["summary"]["model"] == "sum-1b"


async def test_a_profiles_model_names_and_image_flag_are_read(
    settings: EngineSettings, tmp_path: Path
) -> None:
    """``[models]`` names every role and says whether the chat model sees images."""
    write_profile(
        tmp_path / "user",
        "eyes",
        """
        [models]
        chat = "qwen2.5vl:7b"
        chat_images = true
        memory = "qwen2.5:3b"
        summary = "qwen2.5:1.5b"
        """,
    )
    engine = Engine(settings)
    await engine.start()
    persona = engine.persona("p1", "eyes")
    await engine.close()
    assert persona.models is not None
    assert persona.models.chat.model == "qwen2.5vl:7b"
    assert persona.chat_sees_images
    assert persona.models.summary.model == "qwen2.5:1.5b"
    assert persona.vision is None
