"""The engine's packages stand on floors, and no module imports from a floor above its own.

The floors are the design's layers (DESIGN.md, "Parts"), written out here so that a new
package, or an import that runs back up, fails a test instead of passing unseen. Imports
are read from the source (every ``import``, lazy or under ``TYPE_CHECKING`` too), so a
module that is never imported by the suite is checked all the same.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GLUE = "custom_components.companion_agent"
ENGINE = f"{GLUE}.engine"
ENGINE_DIR = ROOT / "custom_components" / "companion_agent" / "engine"

type Floors = Sequence[tuple[str, ...]]

ENGINE_FLOORS: Floors = (
    # 1: what everything shares: typed values, messages and events, errors, text, redaction,
    # the openai SDK's HTTP package, the one retry policy, the SQLite files' one worker model
    (
        "json_types",
        "errors",
        "chars",
        "messages",
        "events",
        "redaction",
        "sdk_http",
        "retry",
        "sqlite",
    ),
    # 2: tool contracts, the registry, results, once-per-turn
    ("tools",),
    # 3: the audit of tool calls, the model adapter, output stages, speech, who speaks (voices),
    # speaking first, eyes (the camera tool, images)
    ("audit", "llm", "pipeline", "speech", "voices", "proactive", "vision"),
    # 4: the guard in front of the tools; plugin types, profiles and hooks
    ("guard", "plugins"),
    # 5: a turn: the handle, the tool loop, prompt assembly, the stored exchanges
    ("turn",),
    # 6: memory: the hook and tiers over the turn's stored exchanges, the stores
    ("memory",),
    # 7: engine.py, the one place the parts are put together; its settings, personas and AI
    # tasks beside it
    ("engine", "personas", "settings", "tasks"),
)
"""Bottom first. A package may import from its own floor and the floors below."""

GUARD_FLOORS: Floors = (("policy",), ("confirmations",), ("executor",))
"""How a confirmed unlock reads: policy → confirmations/ → executor (which then audits)."""


def module_of(path: Path, root: Path) -> str:
    """Return the dotted module name of a source file under ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    """Yield each import in a file as its line and absolute dotted name (``pkg.mod.name``)."""
    module = module_of(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                yield node.lineno, f"{source}.{alias.name}"


def part_under(name: str, scope: str) -> str | None:
    """Return the first part of ``name`` below ``scope``, or None when it is not below it."""
    if not name.startswith(f"{scope}."):
        return None
    return name.removeprefix(f"{scope}.").split(".", maxsplit=1)[0]


def parts_found(folder: Path, root: Path, scope: str) -> set[str]:
    """Return the packages and modules directly below ``scope`` that have source."""
    found = {part_under(module_of(path, root), scope) for path in folder.rglob("*.py")}
    return {part for part in found if part is not None}


def upward_imports(folder: Path, root: Path, scope: str, floors: Floors) -> list[str]:
    """Return every import, under ``scope``, of a part on a higher floor than the importer's."""
    floor_of = {part: level for level, parts in enumerate(floors, 1) for part in parts}
    problems: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        here = part_under(module_of(path, root), scope)
        if here is None:
            continue
        for line, name in imports_of(path, root):
            there = part_under(name, scope)
            if there is not None and floor_of[there] > floor_of[here]:
                problems.append(
                    f"{path.relative_to(root)}:{line} ({here}, floor {floor_of[here]}) "
                    f"imports {name} ({there}, floor {floor_of[there]})"
                )
    return problems


def crossings(folder: Path, root: Path, scope: str) -> int:
    """Return how many imports under ``scope`` name another part than the importer's own."""
    return sum(
        1
        for path in folder.rglob("*.py")
        if (here := part_under(module_of(path, root), scope)) is not None
        for _, name in imports_of(path, root)
        if (there := part_under(name, scope)) is not None and there != here
    )


def test_every_engine_package_stands_on_one_floor() -> None:
    """Each engine package and top-level module is on exactly one floor (a new one must be)."""
    placed = [part for parts in ENGINE_FLOORS for part in parts]
    assert len(placed) == len(set(placed))
    assert parts_found(ENGINE_DIR, ROOT, ENGINE) - set(placed) == set()


def test_no_engine_module_imports_from_a_higher_floor() -> None:
    """Events and errors at the bottom; tools, guard, audit, plugins… in the middle; turn above."""
    assert crossings(ENGINE_DIR, ROOT, ENGINE) >= 200, "the scan found too few imports to trust"
    assert upward_imports(ENGINE_DIR, ROOT, ENGINE, ENGINE_FLOORS) == []


def test_a_confirmed_unlock_reads_policy_confirmations_executor() -> None:
    """Inside the guard: policy imports neither; confirmations/ never imports the executor."""
    guard = ENGINE_DIR / "guard"
    assert parts_found(guard, ROOT, f"{ENGINE}.guard") == {"policy", "confirmations", "executor"}
    assert crossings(guard, ROOT, f"{ENGINE}.guard") >= 5
    assert upward_imports(guard, ROOT, f"{ENGINE}.guard", GUARD_FLOORS) == []


def test_the_engine_never_imports_the_glue_above_it() -> None:
    """No engine module imports a module of the HA side (``custom_components.companion_agent``)."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted(ENGINE_DIR.rglob("*.py"))
        for line, name in imports_of(path, ROOT)
        if name.startswith(f"{GLUE}.") and not name.startswith(f"{ENGINE}.")
    ]
    assert offenders == []


def test_the_scan_catches_an_import_that_runs_back_up(tmp_path: Path) -> None:
    """A lower package importing a higher one, relatively or by full name, is reported."""
    engine = tmp_path / "pkg" / "engine"
    for folder in ("guard", "turn", "tools"):
        (engine / folder).mkdir(parents=True)
        (engine / folder / "__init__.py").write_text('"""A package."""\n')
    (engine / "turn" / "runner.py").write_text("from ..guard import executor\n")
    (engine / "guard" / "executor.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..turn.runner import X\n"
    )
    (engine / "tools" / "registry.py").write_text("import pkg.engine.guard.executor\n")
    floors: Floors = (("tools",), ("guard",), ("turn",))
    problems = upward_imports(engine, tmp_path, "pkg.engine", floors)
    assert [problem.split(" imports ")[1] for problem in problems] == [
        "pkg.engine.turn.runner.X (turn, floor 3)",
        "pkg.engine.guard.executor (guard, floor 2)",
    ]
