"""The Python 3.14 tier (script/py314) runs where it says: on 3.14, with probatio as voluptuous.

script/py314 sets ``PY314_TIER``; elsewhere these are skipped. Its pytest plugin
(tests/support/probatio_voluptuous.py) stops the session before any test when either is
wrong; these check the same from inside the engine, on the schemas the profiles and
plugin.toml files are read with.
"""

from __future__ import annotations

import os
import sys

import pytest
import voluptuous

from custom_components.companion_agent.engine.plugins import config, manifest, profiles

pytestmark = pytest.mark.skipif(
    os.environ.get("PY314_TIER") != "1", reason="runs in script/py314's tier only"
)


def test_the_interpreter_is_python_3_14() -> None:
    """The tier's tests run on CPython 3.14, HA's Python since 2026.3."""
    assert (sys.implementation.name, sys.version_info.major, sys.version_info.minor) == (
        "cpython",
        3,
        14,
    )


def test_the_engine_schemas_are_probatio() -> None:
    """The profile and plugin.toml schemas are built, and fail, by probatio's shim."""
    engine_modules = (config, profiles, manifest)
    assert {vars(module)["vol"].__name__ for module in engine_modules} == {"probatio._vol_shim"}
    assert voluptuous.__name__ == "probatio._vol_shim"
    assert type(profiles.SCHEMA).__module__.startswith("probatio.")
    with pytest.raises(voluptuous.Invalid) as caught:
        profiles.SCHEMA({"id": "me", "personality": "odd"})
    assert type(caught.value).__module__.startswith("probatio.")
