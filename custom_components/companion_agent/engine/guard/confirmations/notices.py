"""What the model and the turn hear of held calls: held, declined, answered, ended.

The model is told a held call waits (and that only the person can confirm it), or that
the person declined it. A held call ends outside the turn that held it (the person's yes
or no, a dashboard, its timer, the host closing the engine): the model hears of each end
once, at the start of the next turn of the person it was held for, in the conversation it
was held in, from a bounded queue; another person's turn there neither hears nor takes it.
A call the person's own words answered is also reported as a tool event of the turn in
which they answered it. The queue outlives its engine through ``notice_file``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from ...events import ToolCallEvent
from ...json_types import JSONObject
from ...messages import ContextSnippet
from ...redaction import shown_arguments
from ...tools.contract import ToolFailure, ToolOutcome, ToolPending
from ...tools.results import compact_json, json_or_text
from .tokens import ConfirmationResult, ConfirmationToken

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
