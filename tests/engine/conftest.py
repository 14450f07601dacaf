"""Helpers for engine tests: a real model adapter bound to the local server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel
from tests.support.llm_server import LLMServer


@pytest.fixture
async def chat_model(llm_server: LLMServer) -> AsyncIterator[OpenAIChatModel]:
    """Return the real OpenAI SDK adapter pointed at the local server, with no retries."""
    model = OpenAIChatModel(
        LLMSettings(base_url=llm_server.url, model="test-model", max_retries=0, chunk_timeout=5)
    )
    yield model
    await model.aclose()
