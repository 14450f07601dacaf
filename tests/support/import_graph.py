"""The package's import graph, read from the source with ``ast``: modules, arrows, cycles.

Every import counts: at module level, under ``if TYPE_CHECKING:`` and inside functions (an
import only type checkers run, or one pushed into a function, still ties two modules
together). An arrow goes to the module an import names (``from .x import y`` names ``x``,
or ``x.y`` when that is a module); importing a submodule is not counted as importing the
packages above it. Used by the module-graph tests and by ``script/architecture``, which
draws the graph and counts it; it needs neither HA nor an import of the code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

type Kind = Literal["module", "type_checking", "function"]
type Graph = Mapping[str, set[str]]


def module_of(path: Path, root: Path) -> str:
    """Return the dotted module name of a source file under ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    """Say whether an ``if`` test is ``TYPE_CHECKING`` (bare or ``typing.TYPE_CHECKING``)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(body: Sequence[ast.stmt], kind: Kind) -> Iterator[tuple[Kind, ast.stmt]]:
    """Yield each import statement in ``body`` with the kind of place it sits in."""
    for node in body:
        match node:
            case ast.Import() | ast.ImportFrom():
                yield kind, node
            case ast.If():
                yield from _imports(
                    node.body, "type_checking" if _is_type_checking(node.test) else kind
                )
                yield from _imports(node.orelse, kind)
            case ast.Try():
                for block in (node.body, node.orelse, node.finalbody):
                    yield from _imports(block, kind)
                for handler in node.handlers:
                    yield from _imports(handler.body, kind)
            case ast.With() | ast.AsyncWith():
                yield from _imports(node.body, kind)
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
                yield from _imports(node.body, "function" if kind == "module" else kind)
            case _:
                pass


def import_graph(folder: Path, root: Path, kinds: frozenset[Kind]) -> dict[str, set[str]]:
    """Return, for each module under ``folder``, the modules under it that it imports."""
    paths = {module_of(path, root): path for path in sorted(folder.rglob("*.py"))}
    graph: dict[str, set[str]] = {module: set() for module in paths}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for kind, node in _imports(tree.body, "module"):
            if kind not in kinds:
                continue
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            else:
                assert isinstance(node, ast.ImportFrom)
                source = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                named = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in paths else source
                    for alias in node.names
                ]
            graph[module].update(name for name in named if name in paths and name != module)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """Return the groups of modules that import each other round (Tarjan's components > 1)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(group) > 1:
                        found.append(sorted(group))
    return sorted(found)


def within(found: list[list[str]], scope: str) -> list[list[str]]:
    """Return the cycles that hold a module of ``scope``."""
    return [group for group in found if any(m == scope or m.startswith(f"{scope}.") for m in group)]


EVERY_IMPORT: frozenset[Kind] = frozenset({"module", "type_checking", "function"})
MODULE_LEVEL: frozenset[Kind] = frozenset({"module"})
