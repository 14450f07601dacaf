"""The confirmation desk: holds risky calls and runs them only when the person says so.

The host's API: ``resolve`` (a service call or dashboard button: token, approve or deny),
``answer`` (the person's next utterance, matched before any model runs), ``pending_for``,
``expire_due`` and ``take_notices`` (what the model must hear on the next turn). Nothing
the model says reaches this class.
"""

from __future__ import annotations

import logging

from ..errors import ConfirmationRefusedError, ToolValidationError
from ..json_types import JSONObject
from ..messages import ToolCallRequest
from .audit import AuditDecision
from .confirmation import ConfirmationBook, ConfirmationToken
from .consent import match_consent
from .contract import ToolContext, ToolFailure, ToolOutcome, ToolPending
from .ledger import Entry, Ledger
from .notices import (
    ConfirmationListener,
    ConfirmationNotice,
    ConfirmationResult,
    ConfirmationStatus,
    ConsentReply,
    NoticeBoard,
    NoticeStatus,
    declined,
    describe_action,
    notice,
    pending_content,
)
from .policy import Verdict
from .registry import failure
from .runner import CallRunner, GuardedCall
from .targets import Target
from .usage import CallOutcome

LOGGER = logging.getLogger(__name__)

MAX_NOTICES = 16


class ConfirmationDesk:
    """Issue, resolve and expire confirmation tokens; audit and announce each step."""

    def __init__(
        self,
        book: ConfirmationBook,
        runner: CallRunner,
        ledger: Ledger,
        listener: ConfirmationListener | None = None,
        notices: NoticeBoard | None = None,
    ) -> None:
        """Bind the token book, the runner that runs approved calls, the ledger, the notices."""
        self.book = book
        self._runner = runner
        self._ledger = ledger
        self._listener = listener
        self._notices = NoticeBoard() if notices is None else notices

    def hold(self, call: GuardedCall, verdict: Verdict) -> ToolPending:
        """Hold a call for the person: issue a token, tell the model, tell the host."""
        action = describe_action(
            call.tool.tool_id, call.tool.spec.description, call.args, call.targets, verdict
        )
        token = self.book.issue(
            tool_id=call.tool.tool_id,
            call_id=call.request.call_id,
            args=call.args,
            ctx=call.ctx,
            action=action,
            targets=call.targets,
        )
        outcome = ToolPending(content=pending_content(token), token_id=token.token_id)
        self._ledger.outcome(
            call.request, call.ctx, "confirm", outcome, reasons=verdict.reasons, token=token
        )
        self._notify(token, "requested")
        return outcome

    async def resolve(
        self,
        token_id: str,
        *,
        approve: bool,
        user_id: str | None,
        conversation_id: str,
        arguments: JSONObject | None = None,
        trace_id: str | None = None,
    ) -> ConfirmationResult:
        """Approve or deny a held call; raise ``ConfirmationRefusedError`` when refused.

        Refused: unknown, already used (replay), expired, another user, another
        conversation, or ``arguments`` given and different from the bound ones. A refusal
        for the wrong user, conversation or arguments leaves the token to its owner.
        """
        self.expire_due()
        peeked = self.book.peek(token_id)
        try:
            token = self.book.take(
                token_id, user_id=user_id, conversation_id=conversation_id, arguments=arguments
            )
        except ConfirmationRefusedError as err:
            self._ledger.refusal(
                err,
                token=peeked,
                user_id=user_id,
                conversation_id=conversation_id,
                arguments=arguments,
                trace_id=trace_id,
            )
            raise
        ctx = token.context(trace_id)
        if not approve:
            refusal = declined(token)
            self._close(token, "cancelled", refusal, ctx)
            return ConfirmationResult(status="cancelled", token=token, outcome=refusal)
        bound = self._bound_call(token, ctx)
        if not isinstance(bound, GuardedCall):
            self._close(token, "failed", bound, ctx)
            return ConfirmationResult(status="executed", token=token, outcome=bound)
        outcome = await self._runner.run(bound, "approved", token=token)
        self._queue_notice(token, "executed" if outcome.kind == "success" else "failed", outcome)
        return ConfirmationResult(status="executed", token=token, outcome=outcome)

    async def answer(
        self,
        text: str,
        *,
        language: str,
        user_id: str | None,
        conversation_id: str,
        trace_id: str | None = None,
    ) -> ConsentReply | None:
        """Match the person's utterance against their held calls, before any model runs.

        None: nothing waits for this user here (run the model). ``other``: not a clear
        yes or no; the calls keep waiting (run the model). ``yes``/``no``: every call
        waiting for this user in this conversation was executed or cancelled.
        """
        waiting = [t for t in self.pending_for(conversation_id) if t.user_id == user_id]
        if not waiting:
            return None
        names = [name for t in waiting for target in t.targets for name in _names(target)]
        verdict = match_consent(text, language, extra_words=names)
        if verdict == "other":
            return ConsentReply(verdict="other")
        results: list[ConfirmationResult] = []
        for token in waiting:
            try:
                result = await self.resolve(
                    token.token_id,
                    approve=verdict == "yes",
                    user_id=user_id,
                    conversation_id=conversation_id,
                    trace_id=trace_id,
                )
            except ConfirmationRefusedError:
                continue
            results.append(result)
        return ConsentReply(verdict=verdict, results=tuple(results))

    def pending_for(self, conversation_id: str) -> list[ConfirmationToken]:
        """Return the calls waiting for confirmation in a conversation, oldest first."""
        self.expire_due()
        return self.book.pending_for(conversation_id)

    def expire_due(self) -> list[ConfirmationNotice]:
        """Cancel the tokens whose time ran out; audit them and queue a notice for the model."""
        return [
            self._close(token, "expired", None, token.context()) for token in self.book.expire_due()
        ]

    def take_notices(self, conversation_id: str) -> list[ConfirmationNotice]:
        """Return, once, what the model must hear about confirmations that ended."""
        self.expire_due()
        return self._notices.pop(conversation_id, [])

    def _bound_call(self, token: ConfirmationToken, ctx: ToolContext) -> GuardedCall | ToolFailure:
        """Rebuild the held call from its token; the tool may have gone or changed."""
        registry = self._runner.registry
        tool = registry.get(token.tool_id)
        if tool is None:
            return failure("execution", f"{token.tool_id} is no longer available; not run")
        try:
            args = registry.check_arguments(tool, token.arguments)
        except ToolValidationError as err:
            return failure("execution", f"the confirmed action was not run: {err}")
        request = _request(token)
        return GuardedCall(request=request, ctx=ctx, tool=tool, args=args, targets=token.targets)

    def _close(
        self,
        token: ConfirmationToken,
        status: NoticeStatus,
        outcome: ToolOutcome | None,
        ctx: ToolContext,
    ) -> ConfirmationNotice:
        """Audit and announce a token that ends without running its call."""
        decision: AuditDecision
        kind: CallOutcome
        match status:
            case "expired":
                decision, kind = "expired", "cancelled"
            case "failed":
                decision, kind = "approved", "failure"
            case _:
                decision, kind = "denied", "cancelled"
        entry = Entry(
            decision=decision,
            outcome=kind,
            category=outcome.category if isinstance(outcome, ToolFailure) else None,
            detail=None if outcome is None else outcome.content,
            token=token.ref,
        )
        self._ledger.write(_request(token), ctx, entry)
        return self._queue_notice(token, status, outcome)

    def _queue_notice(
        self, token: ConfirmationToken, status: NoticeStatus, outcome: ToolOutcome | None
    ) -> ConfirmationNotice:
        """Keep a bounded list of notices per conversation; tell the host's listener."""
        item = ConfirmationNotice(
            status=status, token=token, content=notice(status, token, outcome)
        )
        queue = self._notices.setdefault(token.conversation_id, [])
        queue.append(item)
        del queue[:-MAX_NOTICES]
        self._notify(token, status)
        return item

    def _notify(self, token: ConfirmationToken, status: ConfirmationStatus) -> None:
        """Call the host's listener; its failure never breaks the desk."""
        if self._listener is None:
            return
        try:
            self._listener(token, status)
        except Exception:
            LOGGER.warning("Confirmation listener failed", exc_info=True)


def _request(token: ConfirmationToken) -> ToolCallRequest:
    """Return the call a token is bound to."""
    return ToolCallRequest(call_id=token.call_id, name=token.tool_id, arguments=token.arguments)


def _names(target: Target) -> list[str]:
    """Return the words that name a target: its name and its entity id's parts."""
    words = [target.entity_id.replace(".", " ").replace("_", " ")]
    if target.name:
        words.append(target.name)
    return words
