"""The integration's import graph has no cycles, and no module is named after the stdlib.

The graph is read from the source (``tests/support/import_graph.py``), every import
counted: a cycle hidden under ``TYPE_CHECKING`` or in a function is a class cut in pieces
all the same. The message of a failure counts the cycles once more with module-level
imports alone, so a reader sees which kind they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.import_graph import EVERY_IMPORT, MODULE_LEVEL, cycles, import_graph, within

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "custom_components" / "companion_agent"
MEMORY = "custom_components.companion_agent.engine.memory"

HA_PLATFORMS = {"select"}
"""Files HA loads by name at the integration's root whose name the stdlib also uses."""


def test_the_integration_has_no_import_cycle() -> None:
    """No module reaches itself through imports, in memory or anywhere in the package."""
    graph = import_graph(PACKAGE_DIR, ROOT, EVERY_IMPORT)
    assert sum(len(targets) for targets in graph.values()) >= 500, "too few imports to trust"
    found = cycles(graph)
    at_module_level = cycles(import_graph(PACKAGE_DIR, ROOT, MODULE_LEVEL))
    counts = (
        f"{len(found)} cycle(s) in the package ({len(within(found, MEMORY))} in memory); "
        f"{len(at_module_level)} with module-level imports alone"
    )
    assert within(found, MEMORY) == [], counts
    assert found == [], counts


def test_no_module_is_named_after_a_standard_library_module() -> None:
    """No module is named like a stdlib one (``types``, ``profile``): it would shadow it."""
    named = [
        path.relative_to(PACKAGE_DIR)
        for path in sorted(PACKAGE_DIR.rglob("*"))
        if (path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()))
        and path.stem in sys.stdlib_module_names
        and not (path.parent == PACKAGE_DIR and path.stem in HA_PLATFORMS)
    ]
    assert len(list(PACKAGE_DIR.rglob("*.py"))) >= 100, "too few modules to trust"
    assert named == []


def test_the_graph_finds_a_cycle_however_it_is_hidden(tmp_path: Path) -> None:
    """A cycle through a ``TYPE_CHECKING`` or a function-level import is found; a chain is not."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text('"""A package."""\n')
    (package / "sub" / "__init__.py").write_text('"""A package."""\n')
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import A\n"
    )
    (package / "c.py").write_text("def f():\n    import pkg.d\n")
    (package / "d.py").write_text("from . import c\n")
    (package / "e.py").write_text("from .a import A\n")
    graph = import_graph(package, tmp_path, EVERY_IMPORT)
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"], ["pkg.c", "pkg.d"]]
    assert cycles(import_graph(package, tmp_path, MODULE_LEVEL)) == []
