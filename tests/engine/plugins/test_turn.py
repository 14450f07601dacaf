"""Whole turns through the real openai SDK: hooks, prompt, the tool loop and plugin tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from custom_components.companion_agent.engine.events import ToolCallEvent, TurnResult
from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.plugins import (
    HookManager,
    HostServices,
    PluginSet,
    Profile,
    builtin_roots,
    load_library,
)
from custom_components.companion_agent.engine.turn.request import Persona
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.llm_server import LLMServer
from tests.support.turns import Conversations, run

from .scripted_hooks import Scripted


def default_profile() -> Profile:
    """Return the shipped default profile."""
    profile = load_library(builtin_roots()).profiles.get("default")
    assert profile is not None
    return profile


async def answer(
    plugins: PluginSet, model: OpenAIChatModel, text: str, log: list[str], folder: Path
) -> TurnResult:
    """Run one whole turn through the runner: hooks, prompt, tool loop, after-turn hooks."""
    who = Persona(profile=default_profile(), plugins=plugins, model=model)
    done = await run(TurnRunner(), who, Conversations(folder).request(text))
    log.append(f"answer: {done.result.text}")
    return done.result


def hooked(hooks: HookManager) -> PluginSet:
    """Return a plugin set with only these hooks."""
    return PluginSet((), hooks)


def sent(server: LLMServer, role: str) -> str:
    """Return the content of the first message with ``role`` in the first request."""
    messages = server.requests[0]["messages"]
    assert isinstance(messages, list)
    return str(next(m["content"] for m in messages if m["role"] == role))


async def test_slow_hook_is_cut_and_the_turn_still_answers(
    host: HostServices, llm_server: LLMServer, chat_model: OpenAIChatModel, tmp_path: Path
) -> None:
    """The model gets the fast hook's context in the user message and answers; no wait."""
    log: list[str] = []
    slow = Scripted("slow", host, log, text="never seen", gate=asyncio.Event())
    fast = Scripted("memory", host, log, text="The user's name is Ada.")
    hooks = HookManager([slow, fast], timeout=0.1)
    async with asyncio.timeout(10):
        result = await answer(hooked(hooks), chat_model, "Hello", log, tmp_path)
    assert result.text.startswith("You said:")
    assert sent(llm_server, "user").startswith("[memory context ")
    assert "(memory) The user's name is Ada." in sent(llm_server, "user")
    assert "never seen" not in sent(llm_server, "user")
    assert "Ada" not in sent(llm_server, "system")
    await hooks.close()
    assert "slow cut" in log


async def test_after_turn_does_not_delay_the_answer(
    host: HostServices, llm_server: LLMServer, chat_model: OpenAIChatModel, tmp_path: Path
) -> None:
    """The answer is delivered while the after-turn hook is still blocked."""
    log: list[str] = []
    release = asyncio.Event()
    hooks = HookManager([Scripted("memory", host, log, after_gate=release)])
    async with asyncio.timeout(10):
        result = await answer(hooked(hooks), chat_model, "Hello", log, tmp_path)
        await asyncio.sleep(0)
        release.set()
        await hooks.drain(5)
    said = f"answer: {result.text}"
    assert log[0] == "memory before"
    assert sorted(log[1:3]) == sorted([said, "memory after start"])
    assert log[3] == f"memory after end: {result.text}"  # the hook ended after the answer


async def test_a_plugin_tool_answers_through_the_loop(
    host: HostServices, llm_server: LLMServer, chat_model: OpenAIChatModel, tmp_path: Path
) -> None:
    """The shipped datetime plugin's get_current_time is called and its result is used."""
    library = load_library(builtin_roots())
    plugins = library.activate(default_profile(), host)
    result = await answer(plugins, chat_model, "What time is it?", [], tmp_path)
    (event,) = [e for e in result.tool_calls if e.status == "completed"]
    assert isinstance(event, ToolCallEvent)
    assert event.tool_name == "get_current_time"
    assert json.loads(event.result or "{}")["datetime"] == "2026-02-03T17:30:00+08:00"
    assert "17:30" in result.text
    await plugins.close()
