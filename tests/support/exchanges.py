"""Exchange stores a test opens: each is closed at the end of the test, and its thread ends.

An ``ExchangeStore`` runs its file on a thread of its own (``engine.sqlite.SQLiteWorker``),
and HA's test harness fails a test that leaves a thread behind. A test opens its stores with
``open_exchanges`` and need not close them: ``close_exchange_stores`` (autouse, from
``tests/conftest.py``) closes every one still open when the test ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.errors import CorruptionReporter
from custom_components.companion_agent.engine.turn.exchanges import (
    MAX_TURNS,
    ExchangeStore,
    LegacyFolders,
)

_OPEN: list[ExchangeStore] = []


def open_exchanges(
    path: Path,
    *,
    legacy: LegacyFolders | None = None,
    on_corrupt: CorruptionReporter | None = None,
    max_turns: int = MAX_TURNS,
) -> ExchangeStore:
    """Return the exchange store in ``path``, closed when the test ends."""
    store = ExchangeStore(path, legacy=legacy, on_corrupt=on_corrupt, max_turns=max_turns)
    _OPEN.append(store)
    return store


@pytest.fixture(autouse=True)
async def close_exchange_stores() -> AsyncIterator[None]:
    """Close every exchange store the test opened with ``open_exchanges``."""
    yield
    while _OPEN:
        await _OPEN.pop().close()
