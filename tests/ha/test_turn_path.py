"""A turn reaches the model adapter through five files: the path a reader follows is short.

The stack is read where the adapter (``OpenAIChatModel``) is first called, through a real
HA turn against the scripted server, and continued across the turn's task to where that
task was made (the coroutine's origin), so the host's call into the engine is on it too.
The output stages that only pull the reply as it streams (``engine/pipeline/``, the reply
check) are left out: they read what the model writes and pass nothing down to it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.engine.llm import adapter
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

PACKAGE = Path(adapter.__file__).resolve().parents[2]
PULLING_STAGES = ("engine/pipeline/", "engine/turn/reply_check.py")
"""Stages that pull the reply out of the loop: the output side, not the way to the model."""
TURN_PATH = (
    "conversation.py",
    "engine/engine.py",
    "engine/turn/runner.py",
    "engine/turn/loop.py",
    "engine/llm/adapter.py",
)
"""The files the turn goes through to the model, host first (as docs/architecture.md says)."""


ADAPTER = "engine/llm/adapter.py"
"""Where the path ends: the adapter's own file, whichever of its callers is innermost."""


def ours(filename: str) -> str | None:
    """Return a file's path inside the package, or None when it is not the package's."""
    path = Path(filename).resolve()
    return path.relative_to(PACKAGE).as_posix() if path.is_relative_to(PACKAGE) else None


def path_files(frame: FrameType | None, origin: tuple[Any, ...] | None) -> list[str]:
    """Return the package's files on the stack, innermost first, then those of the origin."""
    files: list[str] = []
    while frame is not None:
        files.append(frame.f_code.co_filename)
        frame = frame.f_back
    files.extend(entry[0] for entry in origin or ())
    found = (ours(name) for name in files)
    return [name for name in found if name is not None and not name.startswith(PULLING_STAGES)]


def outermost_first(files: list[str]) -> tuple[str, ...]:
    """Return each file once, in the order a reader meets them from the host's call."""
    return tuple(dict.fromkeys(reversed(files)))


@pytest.fixture
def origins() -> Iterator[None]:
    """Have every coroutine keep where it was made, for the length of a test."""
    sys.set_coroutine_origin_tracking_depth(64)
    yield
    sys.set_coroutine_origin_tracking_depth(0)


async def test_a_host_request_reaches_the_adapter_through_five_files(
    hass: HomeAssistant,
    setup_entry: MockConfigEntry,
    llm_server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
    origins: None,
) -> None:
    """The adapter is reached from the conversation entity through the engine, runner and loop."""
    llm_server.script(Reply.text("Hello there."))
    seen: list[tuple[str, ...]] = []
    stream = adapter.OpenAIChatModel.stream_with_tools

    def watched(self: adapter.OpenAIChatModel, *args: Any, **kwargs: Any) -> Any:
        """Note the files on the way here, then stream as the adapter does."""
        task = asyncio.current_task()
        origin = getattr(task.get_coro(), "cr_origin", None) if task is not None else None
        seen.append(outermost_first([ADAPTER, *path_files(sys._getframe(1), origin)]))
        return stream(self, *args, **kwargs)

    monkeypatch.setattr(adapter.OpenAIChatModel, "stream_with_tools", watched)
    registry = er.async_get(hass)
    agent_id = next(
        e.entity_id
        for e in er.async_entries_for_config_entry(registry, setup_entry.entry_id)
        if e.domain == "conversation"
    )
    result = await conversation.async_converse(
        hass, "Hi", None, Context(), language="en", agent_id=agent_id
    )

    assert result.response.speech["plain"]["speech"] == "Hello there."
    assert seen == [TURN_PATH]
