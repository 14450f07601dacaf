"""Every module says what it holds in its first line: one sentence a reader can stop at.

Read with ``ast`` from the source (production code, plugins), so a module never imported by
the suite is checked as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "custom_components" / "companion_agent", ROOT / "plugins")


def first_line_problem(source: str) -> str | None:
    """Return why a module's docstring does not open with one whole sentence, or None."""
    docstring = ast.get_docstring(ast.parse(source))
    if not docstring:
        return "no docstring"
    opening = docstring.split("\n\n", 1)[0]
    if "\n" in opening:
        return "its first sentence runs over one line"
    if not opening.endswith("."):
        return "its first line is not a whole sentence"
    return None


def test_every_module_opens_with_one_sentence_on_what_it_holds() -> None:
    """No module lacks a docstring or opens it with more (or less) than one sentence."""
    paths = [path for folder in SOURCES for path in sorted(folder.rglob("*.py"))]
    found = {
        path.relative_to(ROOT).as_posix(): problem
        for path in paths
        if (problem := first_line_problem(path.read_text(encoding="utf-8"))) is not None
    }
    assert len(paths) >= 200, "too few modules to trust"
    assert found == {}


def test_the_check_tells_a_sentence_from_what_is_not_one() -> None:
    """A one-line sentence passes; a missing docstring, a wrapped or unfinished one does not."""
    assert first_line_problem('"""The store of exchanges.\n\nMore here.\n"""\n') is None
    assert first_line_problem("x = 1\n") == "no docstring"
    wrapped = '"""The store of\nexchanges.\n"""\n'
    assert first_line_problem(wrapped) == "its first sentence runs over one line"
    assert (
        first_line_problem('"""Exchanges, kept\n"""\n') == "its first line is not a whole sentence"
    )
