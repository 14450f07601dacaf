"""The conversation history our integration writes to disk, read back by tests.

Every persona's exchanges are rows of one SQLite file (``exchanges.db``); these helpers read
it as an outsider would, with ``sqlite3``, never through the integration.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from homeassistant.core import HomeAssistant

from custom_components.companion_agent.const import DOMAIN

type StoredTurn = dict[str, object]


def _rows(hass: HomeAssistant, columns: str) -> list[tuple[object, ...]]:
    """Return the exchange store's rows (none when there is no file yet)."""
    path = Path(hass.config.path(DOMAIN)) / "exchanges.db"
    if not path.exists():
        return []
    with closing(sqlite3.connect(path)) as db:
        return db.execute(f"SELECT {columns} FROM exchanges ORDER BY time, rowid").fetchall()


def stored_turns(hass: HomeAssistant) -> list[StoredTurn]:
    """Return every stored turn of every persona, read from disk, oldest first."""
    return [json.loads(str(raw)) for (raw,) in _rows(hass, "turn")]


def stored_conversations(hass: HomeAssistant) -> set[tuple[str, str]]:
    """Return the ``(persona, conversation key)`` of every conversation on disk."""
    return {(str(persona), str(key)) for persona, key in _rows(hass, "persona, conversation")}


def assistant_text(turn: StoredTurn) -> str:
    """Return what a stored turn's assistant messages say."""
    messages = turn["messages"]
    assert isinstance(messages, list)
    return "".join(str(m["content"]) for m in messages if m["role"] == "assistant")
