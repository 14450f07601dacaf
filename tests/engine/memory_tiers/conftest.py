"""Fixtures for memory tests: a store, the outbox on disk, memory around them, turns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.llm import OpenAIChatModel
from custom_components.companion_agent.engine.memory.answers import JsonAnswers
from custom_components.companion_agent.engine.memory.companion import (
    CompanionMemory,
    MemorySettings,
)
from custom_components.companion_agent.engine.memory.models import GraphStore, MemoryStore
from custom_components.companion_agent.engine.memory.outbox.outbox import OUTBOX_RETRY, MemoryOutbox
from custom_components.companion_agent.engine.memory.stores.sqlite.store import EmbeddedStore
from tests.support.exchanges import open_exchanges


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    """Return the embedded store (a real SQLite file) memory tests write to."""
    store = await EmbeddedStore.create(tmp_path / "memory.db")
    yield store
    await store.close()


QUICK_RETRY = replace(OUTBOX_RETRY, first_delay=0.01, max_delay=0.05)


async def make_memory(
    tmp_path: Path, store: MemoryStore, model: OpenAIChatModel, graph: GraphStore | None = None
) -> CompanionMemory:
    """Return started memory on ``store`` with its outbox and exchanges under ``tmp_path``."""
    answers = JsonAnswers(model, timeout=5)
    memory = CompanionMemory(
        store,
        MemoryOutbox(tmp_path / "outbox.db", retry=QUICK_RETRY),
        exchanges=open_exchanges(tmp_path / "exchanges.db"),
        answers_for=lambda _name: answers,
        graph=graph,
        settings=MemorySettings(environment="test", window_tokens=400),
    )
    await memory.start()
    return memory


@pytest.fixture
async def memory(
    tmp_path: Path, store: EmbeddedStore, chat_model: OpenAIChatModel
) -> AsyncIterator[CompanionMemory]:
    """Return memory on ``store`` with its outbox and exchanges under ``tmp_path``."""
    memory = await make_memory(tmp_path, store, chat_model, store.graph)
    yield memory
    await memory.close(grace=1.0)
    await memory.exchanges.close()
