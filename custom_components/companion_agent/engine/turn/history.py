"""Conversation history: what the model saw, as the turn runner reads and stores it.

A stored turn holds the person's words, every assistant message and tool call of the turn,
each tool's result (trimmed, secrets masked) and how the turn ended. The next turn's
messages are built from it (``as_messages``), so the model knows which tools it already
called, and an answer that was cut or interrupted comes back to it marked as such. Where
turns live is the exchange store (``exchanges``): a conversation is one of its two views.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from ..events import SpeechCut, TurnOutcome
from ..messages import AssistantMessage, ChatMessage, UserMessage
from .prompt import proactive_words
from .stored import StoredTurn, TurnMessage

LOGGER = logging.getLogger(__name__)

STORE_TIMEOUT = 5.0
DEFAULT_RETENTION = 30 * 86400.0
MARKS: dict[TurnOutcome, str] = {
    "cut": "[the connection to you broke off here; the person heard only the text above]",
    "interrupted": "[the person interrupted you here and did not hear the rest]",
    "failed": "[you could not finish this answer]",
    "timed_out": "[this answer ran out of time here]",
}
SPEECH_MARKS: dict[SpeechCut, str] = {
    "long": "[too long to say aloud: only its first sentences were spoken; answer briefly]",
    "repeated": "[you started repeating yourself here; the rest was not spoken]",
}
"""What the model is told of an answer it ended itself whose speech was cut."""


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


class HistoryView(Protocol):
    """Earlier turns a turn is sent (the person's recent window): read only."""

    async def load(self) -> list[ChatMessage]:
        """Return the earlier turns as chat messages, oldest first."""
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
        messages.extend(without_lines(turn.messages, turn.lines))
        mark = MARKS.get(turn.outcome)
        if mark is None and turn.speech_cut is not None:
            mark = SPEECH_MARKS[turn.speech_cut]
        if mark is not None:
            last = turn.messages[-1] if turn.messages else None
            if isinstance(last, AssistantMessage) and not last.tool_calls:
                messages[-1] = AssistantMessage(content=f"{last.content}\n{mark}".lstrip())
            else:
                messages.append(AssistantMessage(content=mark))
    return messages


def without_lines(messages: Sequence[TurnMessage], lines: Sequence[str]) -> list[TurnMessage]:
    """Return ``messages`` with each holding line taken out where it comes next (the model
    wrote none of them; a small one would copy them). A line not found is left alone."""
    out = list(messages)
    at = 0
    for line in lines:
        for index in range(at, len(out)):
            message = out[index]
            if isinstance(message, AssistantMessage) and line in message.content:
                content = message.content
                found = content.index(line)
                end = found + len(line)
                end += content[end : end + 1] == "\n"
                out[index] = replace(message, content=content[:found] + content[end:])
                at = index
                break
    return out


async def store_in(history: ConversationHistory, turn: StoredTurn, name: str) -> None:
    """Add ``turn`` to the history within ``STORE_TIMEOUT``; log a failure, never raise."""
    try:
        async with asyncio.timeout(STORE_TIMEOUT):
            await history.append(turn)
    except Exception:
        LOGGER.warning("Could not store the turn of %s", name, exc_info=True)


async def amend_in(
    history: ConversationHistory,
    trace_id: str,
    heard: str,
    outcome: TurnOutcome = "interrupted",
) -> None:
    """Mark turn ``trace_id`` ``outcome`` after ``heard`` in the history; never raise."""
    try:
        async with asyncio.timeout(STORE_TIMEOUT):
            await history.amend(trace_id, heard, outcome)
    except Exception:
        LOGGER.warning("Could not mark turn %s interrupted", trace_id, exc_info=True)
