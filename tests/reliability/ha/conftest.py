"""Fixtures for reliability tests: the same real Home Assistant as the tests under tests/ha."""

from __future__ import annotations

from tests.ha.conftest import auto_setup, demo_devices, setup_companion, setup_entry

__all__ = ["auto_setup", "demo_devices", "setup_companion", "setup_entry"]
