"""The running demo's note: where its HA is and how to sign in, for ``--say`` in another shell.

``script/demo`` writes ``.demo/running.json`` (readable by its owner only) once HA is set
up and removes it when it stops; ``--say`` reads it, checks the process is alive and HA
answers, and uses that HA instead of starting one. The note also keeps the conversation
``--say`` last spoke in, so the next ``--say`` goes on with it (HA ends a conversation
after five idle minutes by itself), unless ``--new`` is given.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from .turn import HomeLink


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningDemo:
    """What ``--say`` needs of a running demo."""

    pid: int
    url: str
    token: str
    pipeline_id: str
    persona: str
    username: str
    password: str
    model: str
    model_log: str | None = None
    conversation_id: str | None = None
    satellite: str | None = None
    speaker: str | None = None

    @property
    def link(self) -> HomeLink:
        """Return how to reach its HA."""
        return HomeLink(
            url=self.url,
            token=self.token,
            pipeline_id=self.pipeline_id,
            persona=self.persona,
            satellite=self.satellite,
            speaker=self.speaker,
        )

    def alive(self) -> bool:
        """Say whether the demo process that wrote this note still runs."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _load(path: Path) -> RunningDemo | None:
    """Return the note in ``path`` as written, or None (none there, or not a note)."""
    try:
        return RunningDemo(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def read_note(path: Path) -> RunningDemo | None:
    """Return the note of a demo that still runs, or None (a stale note is removed)."""
    note = _load(path)
    if note is None:
        return None
    if not note.alive():
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return note


def write_note(path: Path, note: RunningDemo) -> None:
    """Write the note, readable by its owner only (it holds a token and a password)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    descriptor = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        json.dump(asdict(note), out)
    part.replace(path)


def remember_conversation(path: Path, note: RunningDemo, conversation_id: str | None) -> None:
    """Keep the conversation ``--say`` spoke in, for the next ``--say``."""
    if conversation_id and conversation_id != note.conversation_id:
        write_note(path, replace(note, conversation_id=conversation_id))


def remove_note(path: Path, pid: int) -> None:
    """Remove the note if this process wrote it."""
    note = _load(path)
    if note is not None and note.pid == pid:
        with contextlib.suppress(OSError):
            path.unlink()
