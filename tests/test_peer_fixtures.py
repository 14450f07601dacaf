"""Each real peer starts once per session: its fixtures are imported in one conftest only.

A session fixture imported by a test module is a fixture of that module: pytest starts one
server for it, and another for every other module that imports it too.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PEER_FIXTURE = re.compile(r"^from tests\.support\.\w+ import [^\n]*\b(\w+_process|neo4j_server)\b")


def test_every_peer_fixture_is_imported_in_one_place() -> None:
    """The session fixtures of the peers come from a single conftest each."""
    places: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("*.py")):
        if path.parent.name == "support":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if match := PEER_FIXTURE.match(line):
                places[match.group(1)].append(str(path.relative_to(TESTS)))
    assert places, "no peer fixture found: the pattern is stale"
    assert {name: where for name, where in places.items() if len(where) > 1} == {}
    assert all(where[0].endswith("conftest.py") for where in places.values()), dict(places)
