"""The JSON histories of before the exchange store, read into it once and deleted.

Before ``exchanges.db``, each conversation was a JSON file
(``conversations/<persona>/<hash>.json``) and each person's recent window another
(``recent/<persona>/<hash>.json``). The first time the store's file is opened, every such
file is read in (a turn found in both, by its trace id, becomes one row), one transaction
per file, and deleted; a file that is not a history is moved aside and reported, as
before. Files moved aside are pruned with the exchanges. Everything here runs on the
store's file thread.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..chars import valid_text
from ..sqlite import in_transaction
from .stored import StoredTurn, dump_turn, parse_turns

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class LegacyFolders:
    """Where the JSON histories of before live: conversations and recent windows."""

    conversations: Path
    windows: Path


def read_legacy(db: sqlite3.Connection, legacy: LegacyFolders) -> list[tuple[Path, Path]]:
    """Read the old JSON histories in, once, and delete them; return the files moved aside."""
    moved: list[tuple[Path, Path]] = []
    for folder, windowed in ((legacy.conversations, False), (legacy.windows, True)):
        for path in sorted(folder.glob("*/*.json")) if folder.is_dir() else ():
            turns = _legacy_turns(path, moved)
            if turns is not None:
                read_in = partial(_import, persona=path.parent.name, key=path.stem)
                in_transaction(db, partial(read_in, turns=turns, windowed=windowed))
                path.unlink(missing_ok=True)
    return moved


def prune_legacy(legacy: LegacyFolders, cutoff: float) -> int:
    """Delete old files left (moved aside) in the old folders, written before ``cutoff``."""
    removed = 0
    for folder in (legacy.conversations, legacy.windows):
        for path in folder.glob("*/*.json*") if folder.is_dir() else ():
            try:
                if path.is_file() and path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except OSError as err:
                LOGGER.warning("Cannot prune %s: %s", path, err)
    return removed


def dumped(turn: StoredTurn) -> str:
    """Return a turn as stored: JSON, valid text."""
    return valid_text(json.dumps(dump_turn(turn), ensure_ascii=False))


def _legacy_turns(path: Path, moved: list[tuple[Path, Path]]) -> list[StoredTurn] | None:
    """Read an old history file; move one that is not a history aside (None)."""
    try:
        return parse_turns(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
        where = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
        try:
            os.replace(path, where)
        except OSError:
            where = path
        LOGGER.warning("Conversation file %s is unusable (%s); moved to %s", path, err, where)
        moved.append((path, where))
        return None


def _import(
    db: sqlite3.Connection, *, persona: str, key: str, turns: Sequence[StoredTurn], windowed: bool
) -> None:
    """Add an old file's turns (a conversation's, or an owner's window), once."""
    column = "owner" if windowed else "conversation"
    if db.execute(
        f"SELECT 1 FROM exchanges WHERE persona = ? AND {column} = ? LIMIT 1", (persona, key)
    ).fetchone():
        return  # read in before, and the file was not deleted then
    for turn in turns:
        if windowed and turn.trace_id:
            joined = db.execute(
                "UPDATE exchanges SET owner = ?, windowed = 1 WHERE persona = ? AND trace_id = ?"
                " AND owner IS NULL",
                (key, persona, turn.trace_id),
            ).rowcount
            if joined:
                continue
        db.execute(
            "INSERT INTO exchanges (persona, conversation, owner, windowed, began, time,"
            " trace_id, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (persona, None if windowed else key, key if windowed else None, int(windowed),
             turn.began or turn.time, turn.time, turn.trace_id, dumped(turn)),
        )  # fmt: skip
