"""Fixtures for memory tests: a store, the outbox on disk, memory around them, turns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.memory.answers import JsonAnswers
from custom_components.companion_agent.engine.memory.companion import (
    CompanionMemory,
    MemorySettings,
)
from custom_components.companion_agent.engine.memory.outbox import MemoryOutbox
from tests.support.fake_memory_store import FakeMemoryStore


@pytest.fixture
def store() -> FakeMemoryStore:
    """Return the store memory tests write to."""
    return FakeMemoryStore()


def make_memory(tmp_path: Path, store: FakeMemoryStore, model: OpenAIChatModel) -> CompanionMemory:
    """Return started memory on ``store`` with its outbox and windows under ``tmp_path``."""
    answers = JsonAnswers(model, timeout=5)
    memory = CompanionMemory(
        store,
        MemoryOutbox(tmp_path / "outbox.db", first_delay=0.01, max_delay=0.05),
        windows=tmp_path / "windows",
        answers_for=lambda _name: answers,
        graph=store,
        settings=MemorySettings(environment="test", window_tokens=400),
    )
    memory.start()
    return memory


@pytest.fixture
async def memory(
    tmp_path: Path, store: FakeMemoryStore, chat_model: OpenAIChatModel
) -> AsyncIterator[CompanionMemory]:
    """Return memory on ``store`` with its outbox and windows under ``tmp_path``."""
    memory = make_memory(tmp_path, store, chat_model)
    yield memory
    await memory.close(grace=1.0)
