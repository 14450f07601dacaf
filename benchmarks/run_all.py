"""``script/bench``: run every benchmark and print one table of figures against targets.

Every script in ``benchmarks/`` that runs as a program is run in turn (each starts the real
peers it needs and stops them) with ``COMPANION_BENCH_FIGURES`` naming a file of its own:
each figure with a target is appended there as one JSON line (``figures.record``). The
runner prints the figure, what was measured, the target and met/missed as one table, and
exits non-zero when a target is missed, a script fails, or a script recorded no figure. A
script that needs data this repository does not hold (``memory_recall``: REALTALK and
LoCoMo) is run when its environment variable names the data, and else shown as skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks.figures import FIGURES_ENV  # noqa: E402

SCRIPT_TIMEOUT = 1800.0
NEEDS = {"memory_recall": "COMPANION_RECALL_DATA"}
"""Scripts that need data from outside, and the variable that names it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """One figure a benchmark recorded: what, how much, against what, and whether met."""

    script: str
    figure: str
    measured: str
    target: str
    met: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """How one benchmark ran: its figures, exit status, output and seconds."""

    script: str
    figures: tuple[Figure, ...]
    code: int
    output: str
    seconds: float


def scripts() -> list[str]:
    """Return the benchmarks that run as programs, by name."""
    return sorted(
        path.stem
        for path in HERE.glob("*.py")
        if path.stem != "run_all" and 'if __name__ == "__main__":' in path.read_text()
    )


def read_figures(script: str, path: Path) -> tuple[Figure, ...]:
    """Return the figures a benchmark recorded in ``path`` (none if it recorded nothing)."""
    if not path.exists():
        return ()
    figures: list[Figure] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        figures.append(
            Figure(
                script=script,
                figure=str(item["figure"]),
                measured=str(item["measured"]),
                target=str(item["target"]),
                met=item["met"] is True,
            )
        )
    return tuple(figures)


async def run(script: str, folder: Path) -> Outcome:
    """Run ``benchmarks/<script>.py`` with its own figures file; return how it went."""
    started = time.monotonic()
    path = folder / f"{script}.jsonl"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / f"{script}.py"),
        cwd=ROOT,
        env={**os.environ, FIGURES_ENV: str(path), "PYTHONUNBUFFERED": "1"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), SCRIPT_TIMEOUT)
        code = process.returncode if process.returncode is not None else 1
        output = out.decode(errors="replace")
    except TimeoutError:
        os.killpg(process.pid, 9)
        await process.wait()
        code, output = 124, f"timed out after {SCRIPT_TIMEOUT:.0f} s"
    figures = read_figures(script, path)
    return Outcome(
        script=script,
        figures=figures,
        code=code,
        output=output,
        seconds=time.monotonic() - started,
    )


def table(figures: list[Figure]) -> str:
    """Return the figures as one plain-text table."""
    rows = [("benchmark", "figure", "measured", "target", "")]
    rows += [
        (f.script, f.figure, f.measured, f.target, "met" if f.met else "MISSED") for f in figures
    ]
    widths = [min(48, max(len(row[i]) for row in rows)) for i in range(4)]
    lines = []
    for row in rows:
        cells = [row[i][: widths[i]].ljust(widths[i]) for i in range(4)]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    return "\n".join(lines)


def problem(outcome: Outcome) -> str | None:
    """Return what went wrong with a run beyond a missed target, if anything did."""
    if not outcome.figures:
        return f"{outcome.script} recorded no figure (exit status {outcome.code})"
    if outcome.code != 0 and all(f.met for f in outcome.figures):
        return f"{outcome.script} exited with {outcome.code} though every figure was met"
    return None


async def main(names: list[str]) -> int:
    """Run the benchmarks, print the table and each failure; return the exit status."""
    figures: list[Figure] = []
    problems: list[tuple[str, str]] = []
    skipped: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="companion-bench-") as folder:
        for script in names:
            if (need := NEEDS.get(script)) and not os.environ.get(need):
                skipped.append(f"{script} (needs its data: set {need})")
                continue
            print(f"== {script}", flush=True)
            outcome = await run(script, Path(folder))
            figures += outcome.figures
            print(
                f"   {len(outcome.figures)} figures in {outcome.seconds:.0f} s, "
                f"exit status {outcome.code}",
                flush=True,
            )
            if (wrong := problem(outcome)) is not None:
                problems.append((wrong, outcome.output[-2000:]))
    print()
    print(table(figures))
    missed = [f for f in figures if not f.met]
    print(
        f"\n{len(figures)} figures, {len(missed)} missed, {len(problems)} scripts failed; "
        f"{time.monotonic() - started:.0f} s in all"
    )
    for name in skipped:
        print(f"skipped: {name}")
    for wrong, output in problems:
        print(f"\n{wrong}; the end of its output:\n{output}")
    return 1 if missed or problems else 0


if __name__ == "__main__":
    known = scripts()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: {' '.join(known)})")
    chosen = parser.parse_args().names or known
    if unknown := [name for name in chosen if name not in known]:
        parser.error(f"unknown benchmarks: {', '.join(unknown)}")
    sys.exit(asyncio.run(main(chosen)))
