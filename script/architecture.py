"""The package's shape, read from its code: the import graph drawn in floors, and its figures.

``script/architecture figures [--at REV]`` prints the production modules, their lines, the
largest module and the import cycles, of the working tree or of a commit.
``script/architecture draw`` prints the two drawings ``docs/architecture.md`` holds (the
engine's packages; the glue's modules and packages over the engine) as Mermaid flowcharts;
``--write`` puts them into the document between their markers. A node is a package (or a
module) directly under the part drawn, with its modules and lines; an arrow means "imports",
and only arrows not implied by others are drawn (a transitive reduction); nodes that import each
other round share a floor, and their arrows are dashed. A node's floor is one above the
highest floor it imports.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.import_graph import EVERY_IMPORT, cycles, import_graph, module_of  # noqa: E402

PACKAGE = "custom_components/companion_agent"
DOTTED = PACKAGE.replace("/", ".")
DOCUMENT = ROOT / "docs" / "architecture.md"
ENGINE_NODE = "engine"
"""The glue's drawing shows the engine as one node: it imports no glue."""

type Graph = Mapping[str, set[str]]


@dataclass(frozen=True, slots=True)
class Figures:
    """What the package is made of: modules, lines, the largest module, import cycles."""

    modules: int
    lines: int
    largest: tuple[str, int]
    cycles: int


def figures(root: Path) -> Figures:
    """Count the production modules under ``root``'s package, their lines and cycles."""
    folder = root / PACKAGE
    sizes = {
        path.relative_to(folder).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in folder.rglob("*.py")
    }
    largest = max(sizes.items(), key=lambda item: (item[1], item[0]))
    graph = import_graph(folder, root, EVERY_IMPORT)
    return Figures(len(sizes), sum(sizes.values()), largest, len(cycles(graph)))


def figures_at(revision: str) -> Figures:
    """Count the package as it was at ``revision`` (a commit of this repository)."""
    with tempfile.TemporaryDirectory() as tree:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, PACKAGE],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
        return figures(Path(tree))


def node_of(module: str, part: str) -> str | None:
    """Return the node a module is drawn in: its first name under ``part`` (None: outside)."""
    if not module.startswith(f"{part}."):
        return None
    return module[len(part) + 1 :].split(".", 1)[0]


def drawn_in_node(module: str, part: str, into: Mapping[str, str]) -> str | None:
    """Return the node ``module`` is drawn in: ``into``'s for its prefixes, else under ``part``."""
    for prefix, node in into.items():
        if module == prefix or module.startswith(f"{prefix}."):
            return node
    return node_of(module, part)


def folded(graph: Graph, part: str, into: Mapping[str, str]) -> dict[str, set[str]]:
    """Return the graph between the nodes of ``part`` (``into``: other prefixes, one node)."""
    nodes: dict[str, set[str]] = {}

    for module, targets in graph.items():
        source = drawn_in_node(module, part, into)
        if source is None or source in into.values():
            continue
        arrows = nodes.setdefault(source, set())
        for target in targets:
            node = drawn_in_node(target, part, into)
            if node is not None and node != source:
                arrows.add(node)
                nodes.setdefault(node, set())
    return nodes


def floors(graph: Graph) -> dict[str, int]:
    """Return each node's floor: 1 with no arrows out, else one above its highest target.

    Nodes that import each other round share one floor (the graph is cut into its strongly
    connected groups first), so a circle between packages cannot hide.
    """
    group_of = {node: tuple(group) for group in cycles(graph) for node in group}
    floor: dict[str, int] = {}

    def of(node: str, seen: frozenset[str]) -> int:
        """Return the floor of ``node`` (and of its circle), given the nodes on the way."""
        if node in floor:
            return floor[node]
        members = group_of.get(node, (node,))
        below = {t for m in members for t in graph[m] if t not in members and t not in seen}
        level = 1 + max((of(t, seen | set(members)) for t in below), default=0)
        for member in members:
            floor[member] = level
        return level

    for node in sorted(graph):
        of(node, frozenset())
    return floor


def groups(graph: Graph) -> dict[str, str]:
    """Return each node's group: the nodes that import each other round share one."""
    found = {node: "+".join(group) for group in cycles(graph) for node in group}
    return {node: found.get(node, node) for node in graph}


def reduced(graph: Graph) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Return the arrows to draw: those no other path implies, and those inside a circle.

    Arrows between groups are reduced on the graph of groups (a circle is one node there);
    every arrow inside a circle is drawn, so the circle shows.
    """
    group = groups(graph)
    between: dict[str, set[str]] = {g: set() for g in group.values()}
    for node, targets in graph.items():
        between[group[node]].update(group[t] for t in targets if group[t] != group[node])

    def reach(start: str, skip: str) -> set[str]:
        """Return the groups ``start`` reaches without its own arrow to ``skip``."""
        seen: set[str] = set()
        work = [t for t in between[start] if t != skip]
        while work:
            node = work.pop()
            if node not in seen:
                seen.add(node)
                work.extend(between[node])
        return seen

    kept = {(g, t) for g, targets in between.items() for t in targets if t not in reach(g, t)}
    down = {
        (node, target)
        for node, targets in graph.items()
        for target in targets
        if (group[node], group[target]) in kept
    }
    round_ = {
        (node, target)
        for node, targets in graph.items()
        for target in targets
        if group[node] == group[target]
    }
    return down, round_


def sizes(root: Path, part: str, into: Mapping[str, str]) -> dict[str, tuple[int, int]]:
    """Return each node's modules and lines."""
    out: dict[str, tuple[int, int]] = {}
    folder = root / PACKAGE
    for path in folder.rglob("*.py"):
        node = drawn_in_node(module_of(path, root), part, into)
        if node is None:
            continue
        modules, lines = out.get(node, (0, 0))
        out[node] = (modules + 1, lines + len(path.read_text(encoding="utf-8").splitlines()))
    return out


def mermaid(graph: Graph, counted: Mapping[str, tuple[int, int]], title: str) -> str:
    """Return the graph as a Mermaid flowchart, highest floor on top, one row per floor."""
    level = floors(graph)
    lines = [f"%% {title}", "flowchart TD"]
    for floor in sorted(set(level.values()), reverse=True):
        lines.append(f"  subgraph floor{floor}[floor {floor}]")
        for node in sorted(n for n in graph if level[n] == floor):
            modules, size = counted.get(node, (0, 0))
            label = f"{node}<br/>{modules} modules, {size} lines" if modules > 1 else node
            if modules == 1:
                label = f"{node}.py<br/>{size} lines"
            lines.append(f'    {_id(node)}["{label}"]')
        lines.append("  end")
    down, round_ = reduced(graph)
    lines.extend(f"  {_id(node)} --> {_id(target)}" for node, target in sorted(down))
    lines.extend(f"  {_id(node)} -.-> {_id(target)}" for node, target in sorted(round_))
    return "\n".join(lines)


def _id(node: str) -> str:
    """Return a Mermaid node id for a node's name."""
    return "n_" + re.sub(r"\W", "_", node)


def drawings(root: Path = ROOT) -> dict[str, str]:
    """Return the document's drawings by marker name: the engine's, the glue's."""
    graph = import_graph(root / PACKAGE, root, EVERY_IMPORT)
    engine = f"{DOTTED}.engine"
    glue_into = {engine: ENGINE_NODE}
    return {
        "engine": mermaid(
            folded(graph, engine, {}),
            sizes(root, engine, {}),
            "engine/: its packages and modules; an arrow means imports",
        ),
        "glue": mermaid(
            folded(graph, DOTTED, glue_into),
            sizes(root, DOTTED, glue_into),
            "the glue over the engine; an arrow means imports",
        ),
    }


def marked(name: str) -> re.Pattern[str]:
    """Return the pattern of a drawing's place in the document, between its markers."""
    return re.compile(
        rf"(<!-- drawing:{name} -->\n```mermaid\n)(.*?)(\n```\n<!-- /drawing:{name} -->)",
        re.DOTALL,
    )


def drawn_in(text: str) -> dict[str, str]:
    """Return the drawings a document holds, by marker name."""
    return {
        name: match.group(2)
        for name in ("engine", "glue")
        if (match := marked(name).search(text)) is not None
    }


def with_drawings(text: str, drawn: Mapping[str, str]) -> str:
    """Return the document with each drawing put between its markers."""
    for name, drawing in drawn.items():

        def put(match: re.Match[str], drawing: str = drawing) -> str:
            """Return the drawing between the markers ``match`` found."""
            return match.group(1) + drawing + match.group(3)

        text, count = marked(name).subn(put, text)
        if count != 1:
            raise SystemExit(f"{DOCUMENT}: the markers of drawing {name!r} are missing")
    return text


def _print(rows: Iterable[tuple[str, object]]) -> None:
    """Print label-value rows."""
    for label, value in rows:
        print(f"{label:<22}{value}")


def main(argv: list[str]) -> int:
    """Run the command line."""
    parser = argparse.ArgumentParser(prog="script/architecture", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    counts = verbs.add_parser("figures", help="modules, lines, the largest module, cycles")
    counts.add_argument("--at", help="a commit to count instead of the working tree")
    draw = verbs.add_parser("draw", help="the drawings of docs/architecture.md")
    draw.add_argument("--write", action="store_true", help="put them into the document")
    args = parser.parse_args(argv)
    if args.verb == "figures":
        found = figures_at(args.at) if args.at else figures(ROOT)
        _print(
            [
                ("production modules", found.modules),
                ("lines", found.lines),
                ("largest module", f"{found.largest[0]} ({found.largest[1]} lines)"),
                ("import cycles", found.cycles),
            ]
        )
        return 0
    drawn = drawings()
    if args.write:
        DOCUMENT.write_text(with_drawings(DOCUMENT.read_text(encoding="utf-8"), drawn))
        return 0
    for name, drawing in drawn.items():
        print(f"<!-- drawing:{name} -->\n```mermaid\n{drawing}\n```\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
