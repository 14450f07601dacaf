"""``docs/architecture.md`` shows the code as it is: its drawings and its figures are current.

The drawings are made from the import graph by ``script/architecture`` (the same reader as
the module-graph tests); a module moved without drawing them again fails here. The closing
table's "now" column is counted afresh: the production modules and cycles exactly, the
lines to the thousand, the paths as the path tests read them.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from tests.ha import test_paths as paths

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "architecture.md"


@functools.cache
def architecture() -> ModuleType:
    """Load ``script/architecture.py``, the script that draws and counts the package."""
    spec = importlib.util.spec_from_file_location(
        "architecture", ROOT / "script" / "architecture.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def table_row(label: str) -> tuple[str, str]:
    """Return the before and now cells of the closing table's row that starts with ``label``."""
    text = DOCUMENT.read_text(encoding="utf-8")
    found = re.search(rf"^\| {re.escape(label)} \| ([^|]+) \| ([^|]+) \|$", text, re.MULTILINE)
    assert found is not None, f"no row {label!r} in {DOCUMENT.name}"
    return found.group(1).strip(), found.group(2).strip()


def test_the_drawings_are_those_the_code_makes_today() -> None:
    """Both drawings in the document are what the script draws from today's imports."""
    script = architecture()
    drawn = script.drawn_in(DOCUMENT.read_text(encoding="utf-8"))
    assert set(drawn) == {"engine", "glue"}
    assert drawn == script.drawings(), "run script/architecture draw --write"


def test_the_figures_now_are_counted_from_the_code() -> None:
    """The table's modules, lines and cycles now are the package's own."""
    found = architecture().figures(ROOT)
    assert table_row("production modules")[1] == str(found.modules)
    assert table_row("lines")[1] == f"{round(found.lines / 1000)} k"
    assert table_row("import cycles")[1] == str(found.cycles) == "0"


def test_the_paths_are_those_the_path_tests_read() -> None:
    """The table's paths now are the files ``tests/ha/test_paths.py`` finds on the stack."""
    assert table_row("files on a turn's path to the model")[1] == str(len(paths.TURN_PATH))
    speech = set(paths.SPEECH_TO_PIPER) | set(paths.AUDIO_TO_HA)
    assert table_row("files on the speech path (a sentence to Piper, its audio to HA)")[1] == str(
        len(speech)
    )


def test_a_drawing_shows_a_circle_between_parts_with_dashed_arrows() -> None:
    """Parts that import each other round share a floor and their arrows are drawn dashed."""
    script = architecture()
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"a", "c"}}
    assert script.floors(graph) == {"a": 2, "b": 2, "c": 1, "d": 3}
    down, round_ = script.reduced(graph)
    assert down == {("b", "c"), ("d", "a")}
    assert round_ == {("a", "b"), ("b", "a")}
