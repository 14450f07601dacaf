"""Fixtures the engine's tests share: the host's HTTP client and an engine's settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from custom_components.companion_agent.engine.engine import EngineSettings, TurnLimits
from custom_components.companion_agent.engine.llm import LLMSettings
from custom_components.companion_agent.engine.plugins import HostServices, builtin_roots
from custom_components.companion_agent.engine.retry import NO_RETRY
from tests.support.llm_server import LLMServer


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """Return the HTTP client a host shares with the engine."""
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def settings(tmp_path: Path, llm_server: LLMServer, http: httpx.AsyncClient) -> EngineSettings:
    """Return settings for an engine on the local server, its files under ``tmp_path``."""
    return EngineSettings(
        model=LLMSettings(base_url=llm_server.url, model="test-model", retry=NO_RETRY),
        http=http,
        data_dir=tmp_path / "data",
        library_roots=(*builtin_roots(), tmp_path / "user"),
        host=HostServices(data_root=tmp_path / "plugins", time_zone=ZoneInfo("UTC"), http=http),
        limits=TurnLimits(turns_per_minute=0),
    )
