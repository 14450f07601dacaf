"""The engine without the integration around it, for a venv that has no Home Assistant.

``custom_components/companion_agent/__init__.py`` is HA glue and imports ``homeassistant``;
the engine below it never does. Where HA is not installed (the venv that runs the engine's
model tests on the newest ``openai`` SDK), the integration's package is registered as a bare
package, so ``custom_components.companion_agent.engine`` imports without running the glue,
and ``snapshot`` reads the snapshot files where HA's harness keeps them.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.amber import AmberSnapshotExtension
from syrupy.location import PyTestLocation

PACKAGE = "custom_components.companion_agent"
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "custom_components" / "companion_agent"


def homeassistant_installed() -> bool:
    """Return whether ``homeassistant`` can be imported here."""
    return importlib.util.find_spec("homeassistant") is not None


def register_bare_package() -> None:
    """Register the integration's package without running its ``__init__``."""
    package = types.ModuleType(PACKAGE)
    package.__path__ = [str(PACKAGE_DIR)]
    sys.modules[PACKAGE] = package


class EngineSnapshotExtension(AmberSnapshotExtension):
    """Snapshots in ``snapshots/`` beside the test, where HA's harness keeps them too."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        """Return the ``snapshots`` folder beside the test file."""
        return str(Path(test_location.filepath).parent / "snapshots")


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """Return syrupy's snapshot fixture reading the files HA's harness writes."""
    return snapshot.use_extension(EngineSnapshotExtension)
