"""Conversation history: what the model saw, kept per conversation in a JSON file.

A stored turn holds the person's words, every assistant message and tool call of the turn,
each tool's result (trimmed, secrets masked) and how the turn ended. The next turn's
messages are built from it, so the model knows which tools it already called, and an
answer that was cut or interrupted comes back to it marked as such.

Files are named by a hash of the conversation id (two ids never share a file), written
atomically off the event loop, and pruned once idle past the retention.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ..chars import valid_text
from ..errors import CorruptionReporter
from ..events import TurnOutcome
from ..messages import AssistantMessage, ChatMessage, UserMessage
from .prompt import proactive_words
from .stored import FORMAT_VERSION, StoredTurn, dump_turn, interrupted_at, parse_turns

LOGGER = logging.getLogger(__name__)

MAX_TURNS = 20
STORE_TIMEOUT = 5.0
DEFAULT_RETENTION = 30 * 86400.0
MARKS: dict[TurnOutcome, str] = {
    "cut": "[the connection to you broke off here; the person heard only the text above]",
    "interrupted": "[the person interrupted you here and did not hear the rest]",
    "failed": "[you could not finish this answer]",
    "timed_out": "[this answer ran out of time here]",
}


class ConversationHistory(Protocol):
    """Where a conversation's earlier turns live between turns and restarts."""

    async def load(self) -> list[ChatMessage]:
        """Return the earlier turns as chat messages, oldest first."""
        ...

    async def append(self, turn: StoredTurn) -> None:
        """Add one finished turn; the next ``load`` sees it at once."""
        ...

    async def amend(self, trace_id: str, heard: str, outcome: TurnOutcome = "interrupted") -> bool:
        """Mark the stored turn ``trace_id`` ``outcome`` after ``heard``; return if found."""
        ...


def file_name(conversation_id: str) -> str:
    """Return the file name of a conversation: a hash, so no two ids ever share a file."""
    return hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def as_messages(turns: Sequence[StoredTurn]) -> list[ChatMessage]:
    """Return stored turns as the messages the model sees, each unfinished one marked."""
    messages: list[ChatMessage] = []
    for turn in turns:
        user = proactive_words(turn.user) if turn.initiator == "proactive" else turn.user
        messages.append(UserMessage(content=user))
        messages.extend(turn.messages)
        if turn.outcome in MARKS:
            last = turn.messages[-1] if turn.messages else None
            mark = MARKS[turn.outcome]
            if isinstance(last, AssistantMessage) and not last.tool_calls:
                messages[-1] = AssistantMessage(content=f"{last.content}\n{mark}".lstrip())
            else:
                messages.append(AssistantMessage(content=mark))
    return messages


class JsonConversationHistory:
    """Keep the last turns of one conversation in a JSON file, written atomically."""

    def __init__(
        self,
        path: Path,
        *,
        max_turns: int = MAX_TURNS,
        on_corrupt: CorruptionReporter | None = None,
    ) -> None:
        """Use ``path``; keep ``max_turns``; ``on_corrupt`` is called for a bad file."""
        self.path = path
        self._max_turns = max_turns
        self._on_corrupt = on_corrupt
        self._turns: list[StoredTurn] | None = None
        self._lock = asyncio.Lock()
        self._dirty = False
        self._writer: asyncio.Task[None] | None = None

    async def load(self) -> list[ChatMessage]:
        """Read the file once (off the event loop) and return its turns as messages."""
        async with self._lock:
            return as_messages(await self._loaded())

    async def turns(self) -> list[StoredTurn]:
        """Return a copy of the stored turns, oldest first (read once, off the event loop)."""
        async with self._lock:
            return list(await self._loaded())

    async def append(self, turn: StoredTurn) -> None:
        """Add a turn, visible to the next ``load`` at once; the file is rewritten after."""
        async with self._lock:
            turns = await self._loaded()
            turns.append(turn)
            del turns[: -self._max_turns]
            self._write_soon()

    async def amend(self, trace_id: str, heard: str, outcome: TurnOutcome = "interrupted") -> bool:
        """Mark the latest turn stored under ``trace_id`` ``outcome``, its text cut to ``heard``.

        ``heard`` is the model text the person could have heard. Return whether the turn
        was found (a turn already pruned, or one without a trace id, is not).
        """
        async with self._lock:
            turns = await self._loaded()
            for index in range(len(turns) - 1, -1, -1):
                if trace_id and turns[index].trace_id == trace_id:
                    turns[index] = interrupted_at(turns[index], heard, outcome)
                    self._write_soon()
                    return True
            return False

    async def flush(self) -> None:
        """Wait until every added turn is on disk."""
        if self._writer is not None:
            await self._writer

    def _write_soon(self) -> None:
        """Note that the turns changed; start the writer unless it already runs."""
        self._dirty = True
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_while_dirty())

    @property
    def writing(self) -> bool:
        """Return True while turns wait to be written."""
        return self._writer is not None and not self._writer.done()

    async def _write_while_dirty(self) -> None:
        """Rewrite the file atomically, off the event loop, until nothing new is waiting.

        Any failure is logged and the turns stay in memory for the next write; the writer
        never dies and leaves no temporary file behind.
        """
        while self._dirty:
            self._dirty = False
            payload = {
                "version": FORMAT_VERSION,
                "turns": [dump_turn(t) for t in self._turns or ()],
            }
            try:
                await asyncio.to_thread(_write_atomic, self.path, payload)
            except Exception as err:
                LOGGER.warning("Cannot write %s (%s); the turns stay in memory", self.path, err)
                return

    async def _loaded(self) -> list[StoredTurn]:
        """Return the cached turns, reading the file the first time."""
        if self._turns is not None:
            return self._turns
        turns, moved = await asyncio.to_thread(self._read)
        self._turns = turns
        if moved is not None and self._on_corrupt is not None:
            self._on_corrupt(self.path, moved)
        return turns

    def _read(self) -> tuple[list[StoredTurn], Path | None]:
        """Read and check the file; anything that is not a history is moved aside.

        Returns the turns, and where a bad file went (the path itself when it could not be
        moved: the conversation then goes on in memory).
        """
        try:
            return parse_turns(self.path.read_text(encoding="utf-8")), None
        except FileNotFoundError:
            return [], None
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
            moved = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            try:
                os.replace(self.path, moved)
            except OSError:
                moved = self.path
            LOGGER.warning(
                "Conversation file %s is unusable (%s); moved to %s", self.path, err, moved
            )
            return [], moved


class ConversationStore:
    """One persona's conversations in a folder; the most recent ones stay in memory."""

    def __init__(
        self,
        folder: Path,
        *,
        capacity: int = 64,
        max_turns: int = MAX_TURNS,
        on_corrupt: CorruptionReporter | None = None,
    ) -> None:
        """Keep conversations in ``folder``, ``capacity`` of them open; report bad files."""
        self.folder = folder
        self._capacity = capacity
        self._max_turns = max_turns
        self._on_corrupt = on_corrupt
        self._open: OrderedDict[str, JsonConversationHistory] = OrderedDict()

    def __len__(self) -> int:
        """Return how many conversations are held in memory."""
        return len(self._open)

    def get(self, conversation_id: str) -> JsonConversationHistory:
        """Return the conversation's history, the same object while it stays recent."""
        history = self._open.pop(conversation_id, None)
        if history is None:
            path = self.folder / f"{file_name(conversation_id)}.json"
            history = JsonConversationHistory(
                path, max_turns=self._max_turns, on_corrupt=self._on_corrupt
            )
        self._open[conversation_id] = history
        while len(self._open) > self._capacity:
            self._open.popitem(last=False)
        return history

    async def flush(self) -> None:
        """Wait until every conversation held in memory is on disk."""
        await asyncio.gather(*(history.flush() for history in self._open.values()))

    async def delete(self, conversation_id: str) -> bool:
        """Delete one conversation, in memory and on disk; say whether a file went."""
        history = self._open.pop(conversation_id, None)
        if history is not None:
            await history.flush()  # no write still under way recreates the file
        path = self.folder / f"{file_name(conversation_id)}.json"
        return await asyncio.to_thread(_unlink, path)

    async def prune(self, retention: float = DEFAULT_RETENTION) -> int:
        """Delete conversations idle longer than ``retention`` seconds; return how many."""
        busy = {history.path for history in self._open.values() if history.writing}
        return await asyncio.to_thread(_prune, self.folder, time.time() - retention, busy)


def _prune(folder: Path, cutoff: float, busy: set[Path]) -> int:
    """Delete the files in ``folder`` last written before ``cutoff`` (blocking)."""
    removed = 0
    for path in folder.glob("*.json*") if folder.is_dir() else ():
        try:
            if path not in busy and path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError as err:
            LOGGER.warning("Cannot prune %s: %s", path, err)
    return removed


def _unlink(path: Path) -> bool:
    """Delete ``path`` if it is there; say whether it was (blocking)."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _write_atomic(path: Path, payload: object) -> None:
    """Write JSON to a temporary file, flush it to disk, then rename it into place."""
    data = valid_text(json.dumps(payload, ensure_ascii=False)).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


async def store_in(histories: Sequence[ConversationHistory], turn: StoredTurn, name: str) -> None:
    """Add ``turn`` to every history, within ``STORE_TIMEOUT``; log a failure, never raise."""
    try:
        async with asyncio.timeout(STORE_TIMEOUT):
            for history in histories:
                await history.append(turn)
    except Exception:
        LOGGER.warning("Could not store the turn of %s", name, exc_info=True)


async def amend_in(
    histories: Sequence[ConversationHistory],
    trace_id: str,
    heard: str,
    outcome: TurnOutcome = "interrupted",
) -> None:
    """Mark turn ``trace_id`` ``outcome`` after ``heard`` in every history; never raise."""
    try:
        async with asyncio.timeout(STORE_TIMEOUT):
            for history in histories:
                await history.amend(trace_id, heard, outcome)
    except Exception:
        LOGGER.warning("Could not mark turn %s interrupted", trace_id, exc_info=True)
