"""The closing table of ``docs/architecture.md``: its rows, read for the tests that check them."""

from __future__ import annotations

import re
from pathlib import Path

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def table_row(label: str) -> tuple[str, str]:
    """Return the before and now cells of the closing table's row that starts with ``label``."""
    text = DOCUMENT.read_text(encoding="utf-8")
    found = re.search(rf"^\| {re.escape(label)} \| ([^|]+) \| ([^|]+) \|$", text, re.MULTILINE)
    assert found is not None, f"no row {label!r} in {DOCUMENT.name}"
    return found.group(1).strip(), found.group(2).strip()
