"""Shared by the benchmarks: percentiles, and one line per figure against its target."""

from __future__ import annotations

import statistics


def percentile(values: list[float], q: float) -> float:
    """Return the q-th percentile (0..100) of values."""
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report_p95(name: str, samples: list[float], target_ms: float, *, unit: str) -> bool:
    """Print count, p50, p95 and max in ms; return whether p95 meets ``target_ms``."""
    p50, p95 = percentile(samples, 50), percentile(samples, 95)
    ok = p95 <= target_ms
    print(
        f"{name:>5}: {unit}={len(samples)} p50={p50:.3f} ms p95={p95:.3f} ms "
        f"max={max(samples):.3f} ms  target p95 <= {target_ms} ms: {'OK' if ok else 'MISSED'}"
    )
    return ok
