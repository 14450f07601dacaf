"""One store of exchanges with two views: a conversation's history, a person's recent window.

Every stored turn is one row of one SQLite file (``exchange_file``): the conversation view
(``conversation()``, what a conversation's next turn knows it said) and the window view
(``window()``, a persona's last exchanges with one person or the household across
conversations, memory tier 1) read the same rows, so a turn is written once, amended once
after playback, forgotten once and pruned once. The first use reads the JSON histories of
before into it (and deletes them); a file that is not what it should be is moved aside and
reported through ``on_corrupt``. The file runs on its own thread (``engine.sqlite``).

Who a row belongs to is its owner, ``owner_of(user_id)``: ``user:<id>`` for a person,
``household`` for a turn with nobody signed in. Conversation ids and owners are kept as
hashes (``history.file_name``), as the old files were named.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from ..errors import CompanionError, CorruptionReporter
from ..events import TurnOutcome
from ..messages import ChatMessage
from .disown import is_disowning
from .exchange_file import MAX_TURNS, MAX_WINDOW_TURNS, ExchangeFile
from .exchange_legacy import LegacyFolders
from .history import DEFAULT_RETENTION, as_messages, file_name
from .stored import StoredTurn, without_images

LOGGER = logging.getLogger(__name__)

HOUSEHOLD = "household"

__all__ = [
    "HOUSEHOLD",
    "MAX_TURNS",
    "MAX_WINDOW_TURNS",
    "ConversationView",
    "ExchangeStore",
    "LegacyFolders",
    "owner_of",
]


def owner_of(user_id: str | None) -> str:
    """Return whose a turn is: ``user:<id>`` for a person, else the household's."""
    return f"user:{user_id}" if user_id else HOUSEHOLD


class ExchangeStore:
    """Every persona's exchanges in one SQLite file, read as conversations and as windows."""

    def __init__(
        self,
        path: Path,
        *,
        legacy: LegacyFolders | None = None,
        on_corrupt: CorruptionReporter | None = None,
        max_turns: int = MAX_TURNS,
    ) -> None:
        """Keep exchanges in ``path`` (opened at first use, reading the old files in ``legacy``)."""
        self.path = path
        self._file = ExchangeFile(path, legacy=legacy, max_turns=max_turns, on_corrupt=on_corrupt)

    def conversation(
        self,
        persona_id: str,
        conversation_id: str,
        *,
        owner: str | None = None,
        windowed: bool = False,
    ) -> ConversationView:
        """Return a conversation's view; its turns are ``owner``'s (in their window if so)."""
        return ConversationView(self, persona_id, conversation_id, owner=owner, windowed=windowed)

    async def window(
        self, persona_id: str, owner: str, limit: int = MAX_WINDOW_TURNS
    ) -> list[StoredTurn]:
        """Return ``owner``'s last ``limit`` windowed turns with a persona, oldest first."""
        return await self._file.window(persona_id, file_name(owner), limit)

    async def forget(
        self, *, persona_id: str | None = None, owner: str | None = None, at: float | None = None
    ) -> int:
        """Delete the exchanges of a persona and/or owner begun by ``at`` (now); keep it so.

        A turn that began at or before ``at`` and is stored later is refused.
        """
        if not persona_id and not owner:
            raise ValueError("forget names a persona and/or an owner")
        key = file_name(owner) if owner else None
        moment = time.time() if at is None else at
        return await self._file.forget(persona_id, key, moment)

    async def disown(
        self, persona_id: str, conversation_id: str, user_id: str
    ) -> StoredTurn | None:
        """Give the household the conversation's last exchange stored as ``user_id``'s.

        Proactive turns and the person's own "that wasn't me" (``disown.is_disowning``) are
        passed over. Return the exchange, or None when there is none of theirs to give.
        """
        return await self._file.reassign(
            persona_id,
            file_name(conversation_id),
            file_name(owner_of(user_id)),
            file_name(HOUSEHOLD),
            lambda turn: turn.initiator != "person" or is_disowning(turn.user),
        )

    async def forget_turn(self, persona_id: str, trace_id: str, at: float | None = None) -> int:
        """Delete a persona's turn ``trace_id`` (the statement of a forgotten memory); keep it so.

        The turn, if it is stored later (it was still being answered), is refused.
        """
        if not trace_id:
            raise ValueError("forget_turn names a turn")
        return await self._file.forget_turn(persona_id, trace_id, time.time() if at is None else at)

    async def prune(self, retention: float = DEFAULT_RETENTION) -> int:
        """Delete the exchanges nobody has spoken in (conversation and window) for ``retention``."""
        return await self._file.prune(time.time() - retention)

    async def counts(self) -> dict[str, int]:
        """Return how many conversations each persona holds."""
        return await self._file.counts()

    async def close(self) -> None:
        """Close the file and end its thread."""
        await self._file.close()


class ConversationView:
    """One conversation's turns in the exchange store: a ``ConversationHistory``."""

    def __init__(
        self,
        store: ExchangeStore,
        persona_id: str,
        conversation_id: str,
        *,
        owner: str | None,
        windowed: bool,
    ) -> None:
        """Read and write ``conversation_id`` of ``persona_id``; new turns are ``owner``'s."""
        self.persona_id = persona_id
        self.conversation_id = conversation_id
        self._file = store._file
        self._key = file_name(conversation_id)
        self._owner = None if owner is None else file_name(owner)
        self._windowed = windowed and owner is not None

    async def load(self) -> list[ChatMessage]:
        """Return the conversation's last turns as messages (none when the file fails)."""
        return as_messages(await self.turns())

    async def turns(self) -> list[StoredTurn]:
        """Return the conversation's last turns, oldest first (none when the file fails)."""
        try:
            return await self._file.conversation(self.persona_id, self._key)
        except (CompanionError, OSError) as err:
            LOGGER.warning("Conversation history unreadable (%s); going on without it", err)
            return []

    async def append(self, turn: StoredTurn) -> None:
        """Add a finished turn (to the owner's window too, if it is in one); images left out."""
        kept = replace(turn, user=without_images(turn.user))
        await self._file.append(self.persona_id, self._key, self._owner, self._windowed, kept)

    async def amend(self, trace_id: str, heard: str, outcome: TurnOutcome = "interrupted") -> bool:
        """Mark the stored turn ``trace_id`` ``outcome`` after ``heard``; return if found."""
        return await self._file.amend(self.persona_id, self._key, trace_id, heard, outcome)

    async def flush(self) -> None:
        """Do nothing: a turn is on disk when ``append`` returns."""
