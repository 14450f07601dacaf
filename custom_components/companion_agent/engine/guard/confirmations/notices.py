"""What the model and the turn hear of held calls, and the file that keeps it for the next engine.

The model is told a held call waits (and that only the person can confirm it), or that
the person declined it. A held call ends outside the turn that held it (the person's yes
or no, a dashboard, its timer, the host closing the engine): the model hears of each end
once, at the start of the next turn of the person it was held for, in the conversation it
was held in, from a bounded queue; another person's turn there neither hears nor takes it.
A call the person's own words answered is also reported as a tool event of the turn in
which they answered it.

**Kept notices.** The queue outlives its engine. A host closes an engine (a reload, a
restart, a shutdown) and builds another; held calls end with the first
(``held_calls.Confirmations.close``) but their people have not heard so yet.
``write_kept`` puts the unheard notices, and the hashed ids of the tokens ended that way,
into one JSON file (written whole, then renamed into place); ``read_kept`` reads it back
once and removes it, so each notice is heard once. Both are bounded
(``MAX_KEPT_NOTICES``, ``MAX_NOTICE_CHARS``, ``MAX_KEPT_TOKENS``). A file that is not what
it should be is moved aside (``<name>.corrupt-<time>``) and nothing is restored; a notice
in it that is not sound is skipped. Both block: call them off the event loop.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from ...chars import valid_text
from ...events import ToolCallEvent
from ...json_types import JSONObject, JSONValue
from ...messages import ContextSnippet
from ...redaction import shown_arguments
from ...tools.contract import ToolFailure, ToolOutcome, ToolPending, compact_json, json_or_text
from .tokens import MAX_CLOSED, REFUSALS, ClosedToken, ConfirmationResult, ConfirmationToken

LOGGER = logging.getLogger(__name__)

MAX_NOTICES = 16
MAX_OWNERS = 256
NOTICE_SOURCE = "confirmations"

type NoticeStatus = Literal["executed", "failed", "cancelled", "expired", "interrupted"]
type NoticeOwner = tuple[str, str | None]
"""The conversation a notice belongs to, and the person (None: the household)."""

NOTICE_STATUSES: frozenset[NoticeStatus] = frozenset(
    {"executed", "failed", "cancelled", "expired", "interrupted"}
)

PENDING_INSTRUCTION = (
    "Not done. End your reply with one short question asking the person whether to do this, "
    "and say nothing after that question. It runs only if they answer yes themselves; nothing "
    "you say or call can confirm it. Do not say it is done and do not call it again."
)

UNRUN_REASONS: dict[NoticeStatus, str] = {
    "expired": "nobody confirmed in time; the action was cancelled",
    "cancelled": "the person declined; the action was cancelled",
    "interrupted": (
        "the assistant restarted before the person answered; the action was cancelled and "
        "was NOT performed. Nothing confirms it now: if the person still wants it, it must "
        "be asked for again"
    ),
}
"""Why a held call ended without running, as the model (and the host's event) hears it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationNotice:
    """A confirmation that ended, for its person's next turn in its conversation to hear."""

    status: NoticeStatus
    conversation_id: str
    user_id: str | None
    content: str

    @property
    def owner(self) -> NoticeOwner:
        """Return whose next turn hears it, and where."""
        return self.conversation_id, self.user_id


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnConfirmations:
    """What a starting turn takes from the held calls: events to report, text for the model."""

    events: tuple[ToolCallEvent, ...] = ()
    notices: tuple[ContextSnippet, ...] = ()
    voice_refused: bool = False
    """The person's yes was refused: the call waits for an enrolled adult's voice. The turn
    says so (``SpokenLines.voice_refused``) without asking the model."""


class NoticeQueue:
    """Each person's notices in each conversation, oldest first; bounded per owner and in all."""

    def __init__(self) -> None:
        """Start with no notices."""
        self._queues: OrderedDict[NoticeOwner, list[ConfirmationNotice]] = OrderedDict()

    def add(
        self, token: ConfirmationToken, status: NoticeStatus, outcome: ToolOutcome | None
    ) -> None:
        """Queue what the model hears of a token's end: the action, and its result or why not."""
        body: JSONObject = {"status": status, "performed": status == "executed"}
        body["action"] = token.action
        if status in UNRUN_REASONS:
            body["reason"] = UNRUN_REASONS[status]
        elif outcome is not None:
            body["result"] = json_or_text(outcome.content)
        self.put(
            ConfirmationNotice(
                status=status,
                conversation_id=token.conversation_id,
                user_id=token.user_id,
                content=compact_json(body),
            )
        )

    def put(self, notice: ConfirmationNotice) -> None:
        """Queue a notice as it is (one kept while the engine was closed, or a new one)."""
        queue = self._queues.setdefault(notice.owner, [])
        self._queues.move_to_end(notice.owner)
        queue.append(notice)
        del queue[:-MAX_NOTICES]
        while len(self._queues) > MAX_OWNERS:
            self._queues.popitem(last=False)

    def take(self, conversation_id: str, user_id: str | None) -> list[ConfirmationNotice]:
        """Return one person's notices in one conversation and forget them."""
        return self._queues.pop((conversation_id, user_id), [])

    def waiting(self) -> list[ConfirmationNotice]:
        """Return every notice nobody has heard yet, the least recently added owner first."""
        return [notice for queue in self._queues.values() for notice in queue]


def pending_outcome(token: ConfirmationToken, action: JSONObject) -> ToolPending:
    """Return what the model hears of ``action`` held under ``token``: not done, ask them."""
    body: JSONObject = {"status": "pending_confirmation", "performed": False}
    body |= {"action": action, "expires_in_seconds": round(token.expires_at - token.created_at)}
    return ToolPending(
        content=compact_json(body | {"instruction": PENDING_INSTRUCTION}),
        token_id=token.token_id,
    )


def declined_outcome(token: ConfirmationToken) -> ToolFailure:
    """Return what the model hears of a held call the person declined."""
    body: JSONObject = {"status": "cancelled", "performed": False}
    body |= {"reason": "the person declined", "action": token.action, "retryable": False}
    return ToolFailure(content=compact_json(body), category="cancelled", retryable=False)


def turn_confirmations(
    answered: tuple[ConfirmationResult, ...], notices: list[ConfirmationNotice]
) -> TurnConfirmations:
    """Return the events of the calls just answered and the notices as reference text."""
    return TurnConfirmations(
        events=tuple(answered_event(result) for result in answered),
        notices=tuple(
            ContextSnippet(source=NOTICE_SOURCE, text=notice.content) for notice in notices
        ),
    )


def answered_event(result: ConfirmationResult) -> ToolCallEvent:
    """Report a held call the person just approved (and its outcome) or declined."""
    request = result.token.request
    done = result.status == "executed" and result.outcome.kind == "success"
    return ToolCallEvent(
        tool_id=request.call_id,
        tool_name=request.name,
        args=shown_arguments(request.arguments, request.secret),
        status="completed" if done else "error",
        result=result.outcome.content,
    )


# Kept notices: what one engine leaves the next.
FILE_VERSION = 1
MAX_KEPT_NOTICES = 512
MAX_NOTICE_CHARS = 16_000
MAX_KEPT_TOKENS = MAX_CLOSED
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_ID_CHARS = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptNotices:
    """What a closed engine left untold: its notices, and the tokens it ended unrun."""

    notices: tuple[ConfirmationNotice, ...] = ()
    interrupted: tuple[ClosedToken, ...] = ()


def write_kept(path: Path, kept: KeptNotices) -> None:
    """Write ``kept`` to ``path`` whole (the newest within the bounds); none: remove the file."""
    notices = [n for n in kept.notices if len(n.content) <= MAX_NOTICE_CHARS]
    notices = notices[-MAX_KEPT_NOTICES:]
    tokens = kept.interrupted[-MAX_KEPT_TOKENS:]
    if not notices and not tokens:
        path.unlink(missing_ok=True)
        return
    data: JSONObject = {
        "version": FILE_VERSION,
        "notices": [_dump_notice(notice) for notice in notices],
        "interrupted": [{"ref": t.ref, "reason": t.reason, "age": t.age} for t in tokens],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(partial, path)


def read_kept(path: Path) -> KeptNotices:
    """Return what the file holds and remove it; a missing file holds nothing."""
    try:
        notices, tokens = _parse(path)
    except FileNotFoundError:
        return KeptNotices()
    except (OSError, ValueError, TypeError, RecursionError) as err:
        _move_aside(path, err)
        return KeptNotices()
    try:
        path.unlink(missing_ok=True)
    except OSError as err:  # heard twice is better than never: keep them
        LOGGER.warning("Cannot remove the notice file %s: %s", path, err)
    kept = [n for n in map(_load_notice, notices[-MAX_KEPT_NOTICES:]) if n is not None]
    ended = [t for t in map(_load_token, tokens[-MAX_KEPT_TOKENS:]) if t is not None]
    if len(kept) < min(len(notices), MAX_KEPT_NOTICES):
        LOGGER.warning("Skipped unsound notices of held calls in %s", path)
    return KeptNotices(notices=tuple(kept), interrupted=tuple(ended))


def _parse(path: Path) -> tuple[list[JSONValue], list[JSONValue]]:
    """Return the file's stored notices and tokens; raise for a file that is not one."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("version") != FILE_VERSION:
        raise ValueError("not a notice file of this version")
    notices, tokens = data.get("notices"), data.get("interrupted")
    if not isinstance(notices, list) or not isinstance(tokens, list):
        raise TypeError("no lists of notices and tokens")
    return notices, tokens


def _dump_notice(notice: ConfirmationNotice) -> JSONObject:
    """Return one notice as stored."""
    return {
        "status": notice.status,
        "conversation_id": notice.conversation_id,
        "user_id": notice.user_id,
        "content": notice.content,
    }


def _load_notice(value: JSONValue) -> ConfirmationNotice | None:
    """Return a stored notice, or None when it is not a sound one."""
    if not isinstance(value, dict):
        return None
    status, conversation_id = value.get("status"), value.get("conversation_id")
    user_id, content = value.get("user_id"), value.get("content")
    if (
        not isinstance(status, str)
        or status not in NOTICE_STATUSES
        or not _is_id(conversation_id)
        or not (user_id is None or _is_id(user_id))
        or not isinstance(content, str)
        or not 0 < len(content) <= MAX_NOTICE_CHARS
    ):
        return None
    return ConfirmationNotice(
        status=status,
        conversation_id=cast(str, conversation_id),
        user_id=cast(str | None, user_id),
        content=valid_text(content),
    )


def _load_token(value: JSONValue) -> ClosedToken | None:
    """Return a stored ended token, or None when it is not a sound one."""
    if not isinstance(value, dict):
        return None
    ref, reason, age = value.get("ref"), value.get("reason"), value.get("age")
    if (
        not _is_id(ref)
        or not isinstance(reason, str)
        or reason not in REFUSALS
        or not isinstance(age, int | float)
        or isinstance(age, bool)
        or not 0 <= age < float("inf")
    ):
        return None
    return ClosedToken(ref=cast(str, ref), reason=reason, age=float(age))


def _is_id(value: JSONValue) -> bool:
    """Say whether a stored value is a usable id: non-empty text, bounded."""
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS


def _move_aside(path: Path, err: Exception) -> None:
    """Move an unusable file out of the way (or, failing that, remove it); never raise."""
    moved = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
    try:
        os.replace(path, moved)
    except OSError as move_err:
        try:
            path.unlink(missing_ok=True)
        except OSError:
            LOGGER.warning("Notice file %s is unusable (%s) and stays: %s", path, err, move_err)
            return
        LOGGER.warning("Notice file %s is unusable (%s); removed", path, err)
        return
    LOGGER.warning("Notice file %s is unusable (%s); moved to %s", path, err, moved)
