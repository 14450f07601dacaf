"""``script/bench``'s table: figures recorded by a benchmark, read back, judged and printed.

A real benchmark-shaped script runs as ``run_all`` runs every benchmark (a subprocess with
``COMPANION_BENCH_FIGURES`` set), so the record → file → table path is the one
``script/bench`` takes; the real benchmarks take minutes and run in ``script/bench`` itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchmarks import run_all
from benchmarks.figures import FIGURES_ENV, record

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from benchmarks.figures import record, report_p95
if __name__ == "__main__":
    ok = report_p95("lag", [1.0, 2.0, 3.0, 4.0], 10.0, unit="runs", figure="release lag")
    {crash}
    ok = record("growth", "×1.9", "< ×1.5", met=False) and ok
    print("a line that is no figure: OK")
    sys.exit(0 if ok else 1)
"""


async def test_a_missed_target_is_in_the_table_and_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One met and one missed figure: both in the table, the run exits 1."""
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "fake.py").write_text(SCRIPT.format(root=str(ROOT), crash="pass"))
    monkeypatch.setattr(run_all, "HERE", bench)
    assert run_all.scripts() == ["fake"]
    assert await run_all.main(["fake"]) == 1
    out = capsys.readouterr().out
    [lag] = [line for line in out.splitlines() if line.startswith("fake") and "release lag" in line]
    assert "p50 2.500 ms, p95 3.850 ms (4 runs)" in lag
    assert lag.split()[-1] == "met"
    [growth] = [line for line in out.splitlines() if line.startswith("fake") and "growth" in line]
    assert growth.split()[-1] == "MISSED"
    assert "2 figures, 1 missed, 0 scripts failed" in out


async def test_a_script_that_records_nothing_or_crashes_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No figure recorded is a failure, and so is a crash after figures that were all met."""
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    silent = 'if __name__ == "__main__":\n    print("nothing measured")\n'
    (bench / "silent.py").write_text(silent)
    (bench / "crash.py").write_text(SCRIPT.format(root=str(ROOT), crash="raise SystemExit(3)"))
    monkeypatch.setattr(run_all, "HERE", bench)
    assert await run_all.main(["silent", "crash"]) == 1
    out = capsys.readouterr().out
    assert "silent recorded no figure (exit status 0)" in out
    assert "crash exited with 3 though every figure was met" in out
    assert "1 figures, 0 missed, 2 scripts failed" in out


async def test_a_benchmark_without_its_data_is_shown_as_skipped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``memory_recall`` without ``COMPANION_RECALL_DATA`` is not run, and says what it needs."""
    monkeypatch.delenv("COMPANION_RECALL_DATA", raising=False)
    assert await run_all.main(["memory_recall"]) == 0
    assert "skipped: memory_recall (needs its data: set COMPANION_RECALL_DATA)" in (
        capsys.readouterr().out
    )


def test_record_writes_nothing_without_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run by hand (no ``script/bench``), a benchmark only prints."""
    monkeypatch.delenv(FIGURES_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert record("x", "1", "<= 2", met=True) is True
    assert list(tmp_path.iterdir()) == []


def test_every_benchmark_program_records_its_figures() -> None:
    """Each program in ``benchmarks/`` calls ``record`` or ``report_p95`` (else bench fails it)."""
    for name in run_all.scripts():
        tree = ast.parse((ROOT / "benchmarks" / f"{name}.py").read_text())
        called = {
            node.func.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        helpers = {"record", "report_p95", "report", "targets", "turn_latency"}
        assert called & helpers, f"{name} records no figure"
