"""The companion's tools for other agents through HA's ``llm`` platform, emulated (2026.7+).

HA 2026.7 added the ``llm`` component, which asks each integration's ``llm`` platform for
tools (``async_get_tools(hass, llm_context, api_id) -> LLMTools | None``, ``LLMTools(tools,
prompt)`` in ``homeassistant/components/llm/__init__.py``; the developer documentation's
"LLM API" page of 3 July 2026) and offers them in its Assist API to every LLM agent and
MCP client. 2026.2.3 has no such component, so it is rebuilt here from that source: an
``LLMTools`` class, and an LLM API offering Assist's tools plus the platform's, called as
another integration's agent calls them (``APIInstance.async_call_tool``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent import llm as companion_llm
from custom_components.companion_agent.const import DOMAIN
from tests.ha.common import add_person, call, row
from tests.ha.common.releases import ToolAnnotations, ToolResult


@dataclass(slots=True)
class LLMTools:
    """``homeassistant.components.llm.LLMTools`` of 2026.7."""

    tools: list[llm.Tool]
    prompt: str | None = None


@pytest.fixture
def llm_component(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give HA the 2026.7 ``llm`` component's ``LLMTools``."""
    module = ModuleType("homeassistant.components.llm")
    module.LLMTools = LLMTools  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "homeassistant.components.llm", module)


class PlatformAPI(llm.API):
    """Assist as 2026.7 offers it: its own tools and those of the integrations' platforms."""

    def __init__(self, hass: HomeAssistant) -> None:
        """Register as ``assist_2026_7``."""
        super().__init__(hass=hass, id="assist_2026_7", name="Assist 2026.7")

    async def async_get_api_instance(self, llm_context: llm.LLMContext) -> llm.APIInstance:
        """Return Assist's tools and our platform's."""
        assist = await llm.async_get_api(self.hass, llm.LLM_API_ASSIST, llm_context)
        offered = companion_llm.async_get_tools(self.hass, llm_context, self.id)
        tools = [*assist.tools, *(offered.tools if offered is not None else [])]
        prompt = "\n".join(p for p in (assist.api_prompt, offered and offered.prompt) if p)
        return llm.APIInstance(
            api=self,
            api_prompt=prompt,
            llm_context=llm_context,
            tools=tools,
            custom_serializer=assist.custom_serializer,
        )


async def ask(api: llm.APIInstance, tool: str, **args: object) -> Any:
    """Call one tool as another integration's agent does; return what HA hands it back."""
    return await api.async_call_tool(llm.ToolInput(tool_name=tool, tool_args=dict(args)))


async def other_agent(hass: HomeAssistant, user_id: str | None) -> llm.APIInstance:
    """Return the API as another integration's agent gets it for a turn of ``user_id``."""
    context = llm.LLMContext(
        platform="ollama",
        context=Context(user_id=user_id),
        language="en",
        assistant="conversation",
        device_id=None,
    )
    return await llm.async_get_api(hass, "assist_2026_7", context)


async def remembered(hass: HomeAssistant, persona: str, person: str | None, text: str) -> str:
    """Store a conclusion about ``person`` (None: the household); return its id."""
    data: dict[str, object] = {"persona": persona, "text": text, "topic": text.split(maxsplit=1)[0]}
    if person is not None:
        data["person"] = person
    return str(row(await call(hass, "remember", data), "memory")["id"])


async def test_emulated_2026_7_another_agent_recalls_only_the_speakers_memories(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str], llm_component: None
) -> None:
    """Another agent's turn for Alice finds hers and the household's, never Bob's."""
    _entry, ada = one_persona
    alice, alice_person = await add_person(hass, "Alice")
    _bob, bob_person = await add_person(hass, "Bob")
    await remembered(hass, ada, alice_person, "Tea: Alice drinks green tea")
    await remembered(hass, ada, bob_person, "Tea: Bob drinks black tea")
    await remembered(hass, ada, None, "Tea: the household buys tea on Fridays")
    llm.async_register_api(hass, PlatformAPI(hass))

    api = await other_agent(hass, alice)
    assert companion_llm.RECALL in {tool.name for tool in api.tools}
    assert companion_llm.RECALL in api.api_prompt
    found = await ask(api, companion_llm.RECALL, query="tea")
    texts = sorted(m["text"] for m in found["memories"])
    assert texts == ["Tea: Alice drinks green tea", "Tea: the household buys tea on Fridays"]

    nobody = await other_agent(hass, None)
    found = await ask(nobody, companion_llm.RECALL, query="tea")
    assert [m["text"] for m in found["memories"]] == ["Tea: the household buys tea on Fridays"]


async def test_emulated_2026_7_forget_reaches_only_the_speakers_memories(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str], llm_component: None
) -> None:
    """Alice's turn forgets her memory by id; Bob's memory stays whatever she asks."""
    entry, ada = one_persona
    alice, alice_person = await add_person(hass, "Alice")
    _bob, bob_person = await add_person(hass, "Bob")
    hers = await remembered(hass, ada, alice_person, "Code: Alice's locker is 7788")
    his = await remembered(hass, ada, bob_person, "Code: Bob's locker is 1234")
    llm.async_register_api(hass, PlatformAPI(hass))
    api = await other_agent(hass, alice)

    gone = await ask(api, companion_llm.FORGET, memory_id=his)
    assert gone["forgotten"] == 0
    gone = await ask(api, companion_llm.FORGET, memory_id=hers)
    assert gone["forgotten"] >= 1
    memory = entry.runtime_data.engine.memory
    assert await memory.get(hers) is None
    assert await memory.get(his) is not None


async def test_emulated_2026_10_platform_tools_are_named_annotated_and_answer_tool_results(
    hass: HomeAssistant,
    one_persona: tuple[MockConfigEntry, str],
    llm_component: None,
    emulate_2026_10: None,
) -> None:
    """From 2026.10 each tool names its integration, carries annotations, returns a result."""
    _entry, ada = one_persona
    alice, alice_person = await add_person(hass, "Alice")
    await remembered(hass, ada, alice_person, "Tea: Alice drinks green tea")
    llm.async_register_api(hass, PlatformAPI(hass))
    api = await other_agent(hass, alice)
    ours = {tool.name: tool for tool in api.tools if tool.name.startswith(f"{DOMAIN}__")}
    assert set(ours) == {companion_llm.RECALL, companion_llm.FORGET, companion_llm.LOOK}
    annotations: dict[str, Any] = {n: getattr(t, "annotations", None) for n, t in ours.items()}
    assert all(getattr(t, "integration", None) == DOMAIN for t in ours.values())
    assert annotations[companion_llm.RECALL] == ToolAnnotations(
        read_only=True, destructive=False, idempotent=True, open_world=False
    )
    assert annotations[companion_llm.FORGET].destructive is True
    found = await ask(api, companion_llm.RECALL, query="tea")
    assert isinstance(found, ToolResult)
    data: Any = found.data
    assert [m["text"] for m in data["memories"]] == ["Tea: Alice drinks green tea"]


async def test_our_own_personas_are_not_offered_the_platform_tools(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str], llm_component: None
) -> None:
    """The companion's own turns have their memory built in: the platform offers nothing."""
    context = llm.LLMContext(
        platform=DOMAIN, context=Context(), language="en", assistant="conversation", device_id=None
    )
    assert companion_llm.async_get_tools(hass, context, "assist") is None
