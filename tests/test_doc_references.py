"""Every ``path.py:symbol`` a design document names exists in the code it names.

``docs/architecture.md`` walks a turn through the code by reference (``engine/engine.py:
Engine.start_turn``); a reference that no longer resolves misleads the next reader. A path
is the integration's own (``custom_components/companion_agent/``), or the repository's, or,
when short (``boundaries.py``), the one file of the integration that ends with it. A symbol
is a function or class at the module's top, or ``Class.member`` (a method, or an attribute
the class assigns or annotates).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "custom_components" / "companion_agent"
DOCUMENTS = (ROOT / "docs" / "architecture.md",)
REFERENCE = re.compile(r"`([A-Za-z0-9_./-]+\.(?:py|ts)):([A-Za-z_][A-Za-z0-9_.]*)`")


def references(document: Path) -> list[tuple[str, str]]:
    """Return each ``(path, symbol)`` the document names, in order, once."""
    found = REFERENCE.findall(document.read_text(encoding="utf-8"))
    return list(dict.fromkeys(found))


def resolve(path: str) -> Path | None:
    """Return the one file ``path`` names, or None (none, or more than one)."""
    for base in (PACKAGE, ROOT):
        if (base / path).is_file():
            return base / path
    matches = [p for p in PACKAGE.rglob(Path(path).name) if p.as_posix().endswith("/" + path)]
    return matches[0] if len(matches) == 1 else None


def defines(source: str, symbol: str) -> bool:
    """Say whether the module ``source`` defines ``symbol`` (``name`` or ``Class.member``)."""
    tree = ast.parse(source)
    scope: list[ast.stmt] = tree.body
    *owners, name = symbol.split(".")
    for owner in owners:
        classes = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner]
        if not classes:
            return False
        scope = classes[0].body
    return any(_names(node, name) for node in scope)


def _names(node: ast.stmt, name: str) -> bool:
    """Say whether ``node`` defines or assigns ``name``."""
    match node:
        case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
            return node.name == name
        case ast.Assign():
            return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        case ast.AnnAssign(target=ast.Name(id=target)) | ast.TypeAlias(name=ast.Name(id=target)):
            return target == name
    return False


def test_the_resolver_finds_what_is_there_and_nothing_else() -> None:
    """The check itself: a real reference resolves, a moved or renamed one does not."""
    engine = resolve("engine/engine.py")
    assert engine is not None
    source = engine.read_text(encoding="utf-8")
    assert defines(source, "Engine.start_turn")
    assert not defines(source, "Engine.no_such_method")
    assert not defines(source, "NoSuchClass.start_turn")
    assert resolve("engine/memory/writes.py") is None  # moved to outbox/ (issue 32)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_reference_in_the_design_documents_resolves(document: Path) -> None:
    """Each ``path:symbol`` names one file, which defines the symbol."""
    named = references(document)
    assert named, f"{document.name} names no code"
    broken = []
    for path, symbol in named:
        file = resolve(path)
        if file is None:
            broken.append(f"{path}:{symbol} (no such file, or more than one)")
        elif file.suffix == ".py" and not defines(file.read_text(encoding="utf-8"), symbol):
            broken.append(f"{path}:{symbol} (not defined there)")
        elif file.suffix == ".ts" and symbol.split(".")[-1] not in file.read_text("utf-8"):
            broken.append(f"{path}:{symbol} (not in the file)")
    assert not broken, f"{document.name}: " + "; ".join(broken)
