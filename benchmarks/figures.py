"""Shared by the benchmarks: percentiles, and one line per figure against its target.

Every figure with a target goes through ``record``: it is printed as the script always
printed it, and, when ``script/bench`` runs the script, also appended as one JSON line to
the file ``COMPANION_BENCH_FIGURES`` names, which ``benchmarks/run_all.py`` reads into its
table. A script that records nothing has measured nothing ``script/bench`` can judge.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

FIGURES_ENV = "COMPANION_BENCH_FIGURES"
"""The environment variable naming the file ``record`` appends its figures to."""


def percentile(values: list[float], q: float) -> float:
    """Return the q-th percentile (0..100) of values."""
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def record(figure: str, measured: str, target: str, *, met: bool) -> bool:
    """Keep one figure for ``script/bench`` (when it runs this script); return ``met``."""
    if path := os.environ.get(FIGURES_ENV):
        line = {"figure": figure, "measured": measured, "target": target, "met": met}
        with Path(path).open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return met


def report_p95(
    name: str, samples: list[float], target_ms: float, *, unit: str, figure: str = ""
) -> bool:
    """Print count, p50, p95 and max in ms; return whether p95 meets ``target_ms``."""
    p50, p95 = percentile(samples, 50), percentile(samples, 95)
    ok = p95 <= target_ms
    print(
        f"{name:>5}: {unit}={len(samples)} p50={p50:.3f} ms p95={p95:.3f} ms "
        f"max={max(samples):.3f} ms  target p95 <= {target_ms} ms: {'OK' if ok else 'MISSED'}"
    )
    measured = f"p50 {p50:.3f} ms, p95 {p95:.3f} ms ({len(samples)} {unit})"
    return record(figure or name.strip(), measured, f"p95 <= {target_ms} ms", met=ok)
