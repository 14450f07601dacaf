"""Conversation storage: the Protocol the core needs and a durable JSON-file implementation."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Self

from .messages import AssistantMessage, ChatMessage, UserMessage

LOGGER = logging.getLogger(__name__)

FORMAT_VERSION = 1
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredTurn:
    """One exchange as kept on disk: what the person said and what was answered."""

    user: str
    assistant: str
    time: float


class ConversationStorage(Protocol):
    """Where a conversation's earlier turns live between turns and restarts."""

    async def load(self) -> list[ChatMessage]:
        """Return the earlier turns as chat messages, oldest first."""
        ...

    async def append_turn(self, user_block: str, response: str) -> None:
        """Add one finished exchange; the next ``load`` sees it at once."""
        ...


type CorruptionReporter = Callable[[Path, Path], None]


class JsonConversationStorage:
    """Keep the last turns of one conversation in a JSON file, written atomically."""

    def __init__(
        self,
        path: Path,
        *,
        max_turns: int = 20,
        on_corrupt: CorruptionReporter | None = None,
    ) -> None:
        """Use ``path``; keep ``max_turns``; ``on_corrupt`` is called on the loop for a bad file."""
        self.path = path
        self._max_turns = max_turns
        self._on_corrupt = on_corrupt
        self._turns: list[StoredTurn] | None = None
        self._lock = asyncio.Lock()
        self._dirty = False
        self._writer: asyncio.Task[None] | None = None

    @classmethod
    def for_conversation(
        cls,
        folder: Path,
        conversation_id: str,
        *,
        max_turns: int = 20,
        on_corrupt: CorruptionReporter | None = None,
    ) -> Self:
        """Return the storage of one conversation inside ``folder``."""
        name = _SAFE_NAME.sub("_", conversation_id)[:120] or "default"
        return cls(folder / f"{name}.json", max_turns=max_turns, on_corrupt=on_corrupt)

    async def load(self) -> list[ChatMessage]:
        """Read the file once (off the event loop) and return its turns as messages."""
        async with self._lock:
            turns = await self._turns_loaded()
        return _as_messages(turns)

    async def append_turn(self, user_block: str, response: str) -> None:
        """Add a turn, visible to the next ``load`` at once; the file is rewritten after."""
        async with self._lock:
            turns = await self._turns_loaded()
            turns.append(StoredTurn(user=user_block, assistant=response, time=time.time()))
            del turns[: -self._max_turns]
            self._dirty = True
            if self._writer is None or self._writer.done():
                self._writer = asyncio.create_task(self._write_while_dirty())

    async def flush(self) -> None:
        """Wait until every added turn is on disk."""
        if self._writer is not None:
            await self._writer

    async def _write_while_dirty(self) -> None:
        """Rewrite the file atomically, off the event loop, until nothing new is waiting."""
        while self._dirty:
            self._dirty = False
            rows = [
                {"user": t.user, "assistant": t.assistant, "time": t.time}
                for t in self._turns or ()
            ]
            try:
                await asyncio.to_thread(
                    _write_atomic, self.path, {"version": FORMAT_VERSION, "turns": rows}
                )
            except OSError as err:
                LOGGER.warning("Cannot write %s (%s); the turns stay in memory", self.path, err)
                return

    async def _turns_loaded(self) -> list[StoredTurn]:
        """Return the cached turns, reading the file the first time."""
        if self._turns is None:
            self._turns = await asyncio.to_thread(self._read)
        return self._turns

    def _read(self) -> list[StoredTurn]:
        """Read and validate the file; move a corrupt one aside and start empty."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            return _parse(raw)
        except (ValueError, TypeError, KeyError) as err:
            moved = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            os.replace(self.path, moved)
            LOGGER.warning(
                "Conversation file %s is corrupt (%s); moved to %s", self.path, err, moved
            )
            if self._on_corrupt is not None:
                self._on_corrupt(self.path, moved)
            return []


def _parse(raw: str) -> list[StoredTurn]:
    """Parse the file's JSON into turns; raise ValueError on any shape problem."""
    data = json.loads(raw)
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise ValueError("unknown format")
    turns = data["turns"]
    if not isinstance(turns, list):
        raise TypeError("turns is not a list")
    parsed = []
    for turn in turns:
        user, assistant, when = turn["user"], turn["assistant"], turn["time"]
        if not isinstance(user, str) or not isinstance(assistant, str):
            raise TypeError("turn text is not a string")
        parsed.append(StoredTurn(user=user, assistant=assistant, time=float(when)))
    return parsed


def _as_messages(turns: Sequence[StoredTurn]) -> list[ChatMessage]:
    """Turn stored exchanges into alternating user/assistant messages."""
    messages: list[ChatMessage] = []
    for turn in turns:
        messages.append(UserMessage(content=turn.user))
        messages.append(AssistantMessage(content=turn.assistant))
    return messages


def _write_atomic(path: Path, payload: object) -> None:
    """Write JSON to a temporary file, flush it to disk, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        json.dump(payload, handle, ensure_ascii=False)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class ConversationShelf:
    """Hand out one storage per conversation, keeping the most recent ones in memory."""

    def __init__(self, folder: Path, *, capacity: int = 64, max_turns: int = 20) -> None:
        """Store conversations as files in ``folder``; keep ``capacity`` of them open."""
        self.folder = folder
        self._capacity = capacity
        self._max_turns = max_turns
        self._open: OrderedDict[str, JsonConversationStorage] = OrderedDict()

    def __len__(self) -> int:
        """Return how many conversations are held in memory."""
        return len(self._open)

    async def flush(self) -> None:
        """Wait until every conversation held in memory is on disk."""
        await asyncio.gather(*(storage.flush() for storage in self._open.values()))

    def get(
        self, conversation_id: str, *, on_corrupt: CorruptionReporter | None = None
    ) -> JsonConversationStorage:
        """Return the conversation's storage, the same object while it stays recent."""
        storage = self._open.pop(conversation_id, None)
        if storage is None:
            storage = JsonConversationStorage.for_conversation(
                self.folder, conversation_id, max_turns=self._max_turns, on_corrupt=on_corrupt
            )
        self._open[conversation_id] = storage
        while len(self._open) > self._capacity:
            self._open.popitem(last=False)
        return storage
