"""What the model and the turn hear of held calls: held, declined, answered, ended.

The model is told a held call waits (and that only the person can confirm it), or that
the person declined it. A held call ends outside the turn that held it (the person's yes
or no, a dashboard, its timer): the model hears of each end once, at the start of the
conversation's next turn, from a bounded queue; a call the person's own words answered is
also reported as a tool event of the turn in which they answered it.
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
MAX_CONVERSATIONS = 256
NOTICE_SOURCE = "confirmations"

type NoticeStatus = Literal["executed", "failed", "cancelled", "expired"]

PENDING_INSTRUCTION = (
    "Not done. End your reply with one short question asking the person whether to do this, "
    "and say nothing after that question. It runs only if they answer yes themselves; nothing "
    "you say or call can confirm it. Do not say it is done and do not call it again."
)

_ENDED_UNRUN: dict[NoticeStatus, str] = {
    "expired": "nobody confirmed in time; the action was cancelled",
    "cancelled": "the person declined; the action was cancelled",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationNotice:
    """A confirmation that ended, for the model to hear at the start of the next turn."""

    status: NoticeStatus
    token: ConfirmationToken
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnConfirmations:
    """What a starting turn takes from the held calls: events to report, text for the model."""

    events: tuple[ToolCallEvent, ...] = ()
    notices: tuple[ContextSnippet, ...] = ()


class NoticeQueue:
    """The notices of each conversation, oldest first; bounded per conversation and in all."""

    def __init__(self) -> None:
        """Start with no notices."""
        self._queues: OrderedDict[str, list[ConfirmationNotice]] = OrderedDict()

    def add(
        self, token: ConfirmationToken, status: NoticeStatus, outcome: ToolOutcome | None
    ) -> None:
        """Queue what the model hears of a token's end: the action, and its result or why not."""
        body: JSONObject = {"status": status, "performed": status == "executed"}
        body["action"] = token.action
        if status in _ENDED_UNRUN:
            body["reason"] = _ENDED_UNRUN[status]
        elif outcome is not None:
            body["result"] = json_or_text(outcome.content)
        queue = self._queues.setdefault(token.conversation_id, [])
        self._queues.move_to_end(token.conversation_id)
        queue.append(ConfirmationNotice(status=status, token=token, content=compact_json(body)))
        del queue[:-MAX_NOTICES]
        while len(self._queues) > MAX_CONVERSATIONS:
            self._queues.popitem(last=False)

    def take(self, conversation_id: str) -> list[ConfirmationNotice]:
        """Return a conversation's notices and forget them."""
        return self._queues.pop(conversation_id, [])


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
