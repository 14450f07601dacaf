"""Fixtures for tests that run a real Home Assistant through the harness."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations(enable_custom_integrations: Any) -> None:
    """Let HA load custom integrations from our custom_components folder."""
