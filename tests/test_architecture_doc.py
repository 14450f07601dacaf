"""``docs/architecture.md`` shows the code as it is: its drawings and its figures are current.

The drawings are made from the import graph by ``script/architecture`` (the same reader as
the module-graph tests); a module moved without drawing them again fails here. The closing
table's "now" column is counted afresh: the production modules and cycles exactly, the
lines to the thousand (``tests/ha/test_paths.py`` checks the rows of the paths).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tests.support.architecture_table import DOCUMENT, table_row
from tests.support.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def architecture() -> ModuleType:
    """Return ``script/architecture.py`` as a module."""
    return load_script("architecture")


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


def test_a_drawing_shows_a_circle_between_parts_with_dashed_arrows() -> None:
    """Parts that import each other round share a floor and their arrows are drawn dashed."""
    script = architecture()
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"a", "c"}}
    assert script.floors(graph) == {"a": 2, "b": 2, "c": 1, "d": 3}
    down, round_ = script.reduced(graph)
    assert down == {("b", "c"), ("d", "a")}
    assert round_ == {("a", "b"), ("b", "a")}
