"""Whole turns through the real openai SDK: hooks, prompt, the tool loop and plugin tools."""

from __future__ import annotations

import asyncio
import json

from custom_components.companion_agent.engine.core import AgentCore
from custom_components.companion_agent.engine.events import ToolCallEvent, TurnResult
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.plugins import (
    HookManager,
    HostServices,
    Profile,
    TurnContext,
    builtin_roots,
    load_library,
)
from custom_components.companion_agent.engine.prompt import PromptBuilder, UserPromptBlock
from custom_components.companion_agent.engine.tools.contract import ToolContext
from custom_components.companion_agent.engine.tools.registry import ToolRegistry
from tests.support.llm_server import LLMServer

from .hookkit import Scripted

TURN = TurnContext(conversation_id="conv-1", profile_id="default", first_turn=True)
TOOLS = ToolContext(conversation_id="conv-1")


def default_profile() -> Profile:
    """Return the shipped default profile."""
    profile = load_library(builtin_roots()).profiles.get("default")
    assert profile is not None
    return profile


async def answer(
    hooks: HookManager, model: OpenAIChatModel, text: str, log: list[str], registry: ToolRegistry
) -> TurnResult:
    """Run one turn the way the host does: hooks, prompt, tool loop, then after-turn hooks."""
    snippets = await hooks.before_turn(text, TURN)
    messages = PromptBuilder(default_profile()).build(
        [], UserPromptBlock(text=text, context=snippets)
    )
    result: TurnResult | None = None
    async for item in AgentCore(model, registry).run_turn(messages, TOOLS):
        if isinstance(item, TurnResult):
            result = item
    assert result is not None
    hooks.after_turn(text, result.text, TURN)
    log.append(f"answer: {result.text}")
    return result


def sent(server: LLMServer, role: str) -> str:
    """Return the content of the first message with ``role`` in the first request."""
    messages = server.requests[0]["messages"]
    assert isinstance(messages, list)
    return str(next(m["content"] for m in messages if m["role"] == role))


async def test_slow_hook_is_cut_and_the_turn_still_answers(
    host: HostServices, llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """The model gets the fast hook's context in the user message and answers; no wait."""
    log: list[str] = []
    slow = Scripted("slow", host, log, text="never seen", gate=asyncio.Event())
    fast = Scripted("memory", host, log, text="The user's name is Ada.")
    hooks = HookManager([slow, fast], timeout=0.1)
    async with asyncio.timeout(10):
        result = await answer(hooks, chat_model, "Hello", log, ToolRegistry())
    assert result.text.startswith("You said:")
    assert "[memory context]" in sent(llm_server, "user")
    assert "(memory) The user's name is Ada." in sent(llm_server, "user")
    assert "never seen" not in sent(llm_server, "user")
    assert "Ada" not in sent(llm_server, "system")
    await hooks.close()
    assert "slow cut" in log


async def test_after_turn_does_not_delay_the_answer(
    host: HostServices, llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """The answer is delivered while the after-turn hook is still blocked."""
    log: list[str] = []
    release = asyncio.Event()
    hooks = HookManager([Scripted("memory", host, log, after_gate=release)])
    async with asyncio.timeout(10):
        result = await answer(hooks, chat_model, "Hello", log, ToolRegistry())
        await asyncio.sleep(0)
        release.set()
        await hooks.drain(5)
    assert log == [
        "memory before",
        f"answer: {result.text}",
        "memory after start",
        f"memory after end: {result.text}",
    ]


async def test_a_plugin_tool_answers_through_the_loop(
    host: HostServices, llm_server: LLMServer, chat_model: OpenAIChatModel
) -> None:
    """The shipped datetime plugin's get_current_time is called and its result is used."""
    library = load_library(builtin_roots())
    plugins = library.activate(default_profile(), host)
    registry = ToolRegistry(plugins.tools)
    result = await answer(plugins.hooks, chat_model, "What time is it?", [], registry)
    (event,) = [e for e in result.tool_calls if e.status == "completed"]
    assert isinstance(event, ToolCallEvent)
    assert event.tool_name == "get_current_time"
    assert json.loads(event.result or "{}")["datetime"] == "2026-02-03T17:30:00+08:00"
    assert "17:30" in result.text
    await plugins.close()
