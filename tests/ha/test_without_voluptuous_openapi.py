"""Without ``voluptuous_openapi``, as from HA 2026.9: every module imports, a turn acts.

HA 2026.9 removed ``voluptuous-openapi`` (core PR 175128; our own
``tests/data/ha_constraints/2026.9.4.txt`` lists neither voluptuous package). 2026.2.3's
``helpers/llm.py`` still imports it, so it is made unimportable once HA's helpers loaded:
an emulation of the missing package, not of all of 2026.9 (``test_ha_releases`` has the
tools' shapes). Its schemas here are still real voluptuous ones, which only
``voluptuous_openapi`` converts, so each tool goes to the model with an open schema and one
warning, and HA validates the arguments itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from homeassistant.core import HomeAssistant

from tests.ha.common import SetupCompanion
from tests.ha.common.house import build_house, say, state, tool_results
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

pytestmark = pytest.mark.usefixtures("demo_devices")

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import importlib, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import homeassistant.helpers.llm  # HA's own helpers load it (2026.2.3)
sys.modules["voluptuous_openapi"] = None  # from here on, as on 2026.9: not installed
import custom_components.companion_agent as package
count = 0
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    importlib.import_module(info.name)
    count += 1
print(count)
"""


def test_every_module_imports_without_voluptuous_openapi() -> None:
    """Each module of the integration imports with ``voluptuous_openapi`` gone."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) > 100


async def test_setup_and_a_turn_with_a_tool_call_without_voluptuous_openapi(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    llm_server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The entry sets up and the model turns on a light; the schemas' loss is logged."""
    monkeypatch.setitem(sys.modules, "voluptuous_openapi", None)
    entry = await build_house(hass, setup_companion)
    llm_server.script(
        Reply.tool_calls(("call_1", "HassTurnOn", '{"name": "Bed Light"}')),
        Reply.text("The bed light is on."),
    )
    result, content = await say(hass, entry, "Turn on the bed light")
    assert state(hass, "light.bed_light") == "on"
    assert tool_results(content) == [("HassTurnOn", "completed")]
    assert result.response.speech["plain"]["speech"] == "The bed light is on."
    tools = llm_server.requests[0]["tools"]
    assert isinstance(tools, list)
    [turn_on] = [t for t in tools if t["function"]["name"] == "HassTurnOn"]
    assert turn_on["function"]["parameters"]["type"] == "object"
    assert "tools are offered without their parameters' schema (HassTurnOn" in caplog.text
    assert "voluptuous_openapi is not installed" in caplog.text
