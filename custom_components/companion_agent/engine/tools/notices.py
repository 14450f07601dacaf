"""What the model and the host hear about confirmations: pending, executed, cancelled, expired."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..json_types import JSONObject, JSONValue
from .confirmation import ConfirmationToken
from .consent import Consent
from .contract import ToolFailure, ToolOutcome
from .policy import Verdict
from .redact import redact
from .targets import Target

type ConfirmationStatus = Literal["requested", "executed", "failed", "cancelled", "expired"]
type NoticeStatus = Literal["executed", "failed", "cancelled", "expired"]
type ConfirmationListener = Callable[[ConfirmationToken, ConfirmationStatus], None]

PENDING_INSTRUCTION = (
    "Not done. Ask the person, in one short question, whether to do this. It runs only if "
    "they answer yes themselves; nothing you say or call can confirm it. Do not say it is "
    "done and do not call it again."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationResult:
    """How a resolved confirmation ended: the bound call ran (with its outcome) or not."""

    status: Literal["executed", "cancelled"]
    token: ConfirmationToken
    outcome: ToolOutcome


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationNotice:
    """A confirmation that ended, for the model to hear at the start of the next turn."""

    kind: Literal["confirmation_notice"] = "confirmation_notice"
    status: NoticeStatus
    token: ConfirmationToken
    content: str


class NoticeBoard(dict[str, list[ConfirmationNotice]]):
    """Notices per conversation, shared by every turn's desk until the model has heard them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsentReply:
    """What the person's utterance did to the confirmations waiting in their conversation."""

    verdict: Consent
    results: tuple[ConfirmationResult, ...] = ()


def describe_action(
    tool_id: str, description: str, args: JSONObject, targets: Sequence[Target], verdict: Verdict
) -> JSONObject:
    """Describe a held call for the person, dashboards and the model (secrets masked)."""
    return {
        "tool": tool_id,
        "description": description[:200],
        "arguments": redact(args),
        "targets": [target.describe() for target in targets],
        "reasons": list(verdict.reasons),
    }


def pending_content(token: ConfirmationToken) -> str:
    """Return the structured "pending confirmation" result the model receives."""
    return _dump(
        {
            "status": "pending_confirmation",
            "performed": False,
            "action": token.action,
            "expires_in_seconds": round(token.expires_at - token.created_at),
            "instruction": PENDING_INSTRUCTION,
        }
    )


def declined(token: ConfirmationToken) -> ToolFailure:
    """Return the outcome of a call the person declined."""
    content = _dump(
        {
            "status": "cancelled",
            "performed": False,
            "reason": "the person declined",
            "action": token.action,
            "retryable": False,
        }
    )
    return ToolFailure(content=content, category="cancelled", retryable=False)


def notice(
    status: NoticeStatus, token: ConfirmationToken, outcome: ToolOutcome | None = None
) -> str:
    """Return what the model hears on the next turn about a confirmation that ended."""
    body: JSONObject = {"status": status, "performed": status == "executed", "action": token.action}
    match status:
        case "expired":
            body["reason"] = "nobody confirmed in time; the action was cancelled"
        case "cancelled":
            body["reason"] = "the person declined; the action was cancelled"
        case "executed" | "failed" if outcome is not None:
            body["result"] = _json_or_text(outcome.content)
    return _dump(body)


def _json_or_text(text: str) -> JSONValue:
    """Embed a result as JSON when it is JSON, else as text."""
    try:
        value: JSONValue = json.loads(text)
    except ValueError:
        return text
    return value


def _dump(body: JSONObject) -> str:
    """Serialise model-facing content compactly."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
