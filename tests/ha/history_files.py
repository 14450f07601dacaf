"""The conversation history our integration writes to disk, read back by tests."""

from __future__ import annotations

import json
from pathlib import Path

from homeassistant.core import HomeAssistant

from custom_components.companion_agent.const import DOMAIN

type StoredTurn = dict[str, object]


def stored_turns(hass: HomeAssistant) -> list[StoredTurn]:
    """Return every stored turn of every persona, read from disk."""
    folder = Path(hass.config.path(DOMAIN)) / "conversations"
    turns: list[StoredTurn] = []
    for path in folder.rglob("*.json"):
        turns.extend(json.loads(path.read_text("utf-8"))["turns"])
    return turns


def assistant_text(turn: StoredTurn) -> str:
    """Return what a stored turn's assistant messages say."""
    messages = turn["messages"]
    assert isinstance(messages, list)
    return "".join(str(m["content"]) for m in messages if m["role"] == "assistant")
