"""Fixtures for plugin tests: host services with a fixed clock and a temporary data folder."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from custom_components.companion_agent.engine.plugins import HostServices

NOW = datetime(2026, 2, 3, 9, 30, tzinfo=UTC)
SPEAKERS = re.compile(r"(assist_satellite|media_player)\.[a-z0-9_]+")
"""A host whose speakers are named as Home Assistant names them."""


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """Return an HTTP client like the host's shared one."""
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def host(tmp_path: Path, http: httpx.AsyncClient) -> HostServices:
    """Return host services: data under tmp_path, Shanghai time, a clock fixed at NOW."""
    return HostServices(
        data_root=tmp_path / "data",
        time_zone=ZoneInfo("Asia/Shanghai"),
        http=http,
        clock=lambda: NOW,
        speakers=SPEAKERS,
    )
