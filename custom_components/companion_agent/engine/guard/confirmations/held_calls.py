"""Held calls: what happens when the person says yes, says no, or says nothing in time.

A risky call is not run: ``hold`` issues a token (``tokens.py``) bound to the tool, the
arguments, the user and the conversation, with the call's own runner inside it. Only
``resolve`` (a service call, a dashboard, a phone) or ``answer`` (the person's next words,
matched by ``consent.py`` before any model runs) can run it, once, before it expires.
Nothing the model says reaches this module. Every end of a token (run, declined, expired,
interrupted by the host closing the engine, refused) is audited, told to the host's
listener, and queued (``notices.py``: all that the model hears of held calls) for the next
turn of its person in its conversation; ``before_turn`` is all a turn asks. ``close``
ends every waiting call out loud; ``kept`` and ``restore`` carry what nobody has heard yet
(and which tokens were interrupted) from one engine to the next.

**A voice's yes.** A call held under a rule that asks for an adult's voice
(``ConfirmationToken.needs_voice``) runs only on the word of someone the host says may
approve it (``Speaker.may_approve``: an enrolled adult's voice, or a signed-in person not
enrolled as a child; ``adult`` for a dashboard). Any spoken turn in its conversation may
answer it, whoever it was held for: a yes from a voice that may not approve is refused
(the turn says so, the call keeps waiting, and a later adult's yes runs it once); a no
from any voice declines it, the safe direction. A typed turn answers only its own
person's calls, as every call is answered; a turn the host says nothing about (no
``Speaker``) may decline such a call but never approve it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, NoReturn

from ...audit import AuditDecision, AuditRecord, AuditSink, CallOutcome, NullAudit
from ...errors import ConfirmationRefusedError
from ...json_types import JSONObject
from ...messages import ToolCallRequest
from ...tools.contract import ToolContext, ToolFailure, ToolOutcome, ToolPending
from ...voices import Speaker
from .consent import Consent, match_consent
from .notices import (
    UNRUN_REASONS,
    ConfirmationNotice,
    KeptNotices,
    NoticeQueue,
    NoticeStatus,
    TurnConfirmations,
    declined_outcome,
    pending_outcome,
    turn_confirmations,
)
from .tokens import (
    DEFAULT_TTL,
    HOUSEHOLD_APPROVER,
    REFUSALS,
    Approval,
    ConfirmationResult,
    ConfirmationToken,
    HeldRun,
    RefusalReason,
    TokenStore,
    token_ref,
)

LOGGER = logging.getLogger(__name__)

type ConfirmationStatus = Literal[
    "requested", "executed", "failed", "cancelled", "expired", "interrupted"
]
type ConfirmationListener = Callable[[ConfirmationToken, ConfirmationStatus], None]

_UNKNOWN_CALL = ToolCallRequest(call_id="", name="unknown", arguments="{}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsentReply:
    """What the person's words did to the calls waiting in their conversation."""

    verdict: Consent
    results: tuple[ConfirmationResult, ...] = ()
    refused: tuple[ConfirmationToken, ...] = ()
    """The calls a yes could not run: they wait for an enrolled adult's voice (still live)."""


class Confirmations:
    """Hold, resolve and expire calls that wait for the person; audit and announce each step."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        audit: AuditSink | None = None,
        listener: ConfirmationListener | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Set the lifetime in seconds, the audit sink, the host's listener and the clock."""
        self.tokens = TokenStore(self._expired, ttl=ttl, clock=clock)
        self._audit = NullAudit() if audit is None else audit
        self._listener = listener
        self._notices = NoticeQueue()

    def hold(
        self,
        request: ToolCallRequest,
        ctx: ToolContext,
        action: JSONObject,
        run: HeldRun,
        *,
        names: tuple[str, ...] = (),
        reasons: tuple[str, ...] = (),
        needs_voice: bool = False,
    ) -> ToolPending:
        """Hold a call: issue (or reuse) its token, audit it, tell the host, tell the model.

        ``request.arguments`` must be canonical JSON; the same call held twice for the same
        user and conversation shares one token, so one "yes" never runs it twice.
        ``needs_voice``: only an enrolled adult may approve it (the module's doc).
        """
        token = self.tokens.issue(
            request=request, ctx=ctx, action=action, names=names, run=run, needs_voice=needs_voice
        )
        outcome = pending_outcome(token, action)
        self._record(token, "confirm", outcome, ctx, reasons=reasons)
        self._notify(token, "requested")
        return outcome

    async def resolve(
        self,
        token_id: str,
        *,
        approve: bool,
        user_id: str | None,
        conversation_id: str | None = None,
        arguments: JSONObject | None = None,
        trace_id: str | None = None,
        adult: bool = True,
        approval: Approval | None = None,
    ) -> ConfirmationResult:
        """Run or decline a held call; raise ``ConfirmationRefusedError`` when refused.

        Refused: unknown, already used (a replay), expired, another user, another
        conversation (when one is given), or ``arguments`` given that are not the bound
        ones; a yes to a call that needs an adult's voice when ``adult`` is False
        (``not_adult``). A refusal for the wrong user, conversation or arguments, or for
        ``not_adult``, leaves the token waiting. ``approval`` says who approved (the
        audit's); by default ``user_id``, not by voice.
        """
        reason = self.tokens.refusal(
            token_id, user_id=user_id, conversation_id=conversation_id, arguments=arguments
        )
        token = self.tokens.get(token_id)
        if reason is None and token is not None and approve and token.needs_voice and not adult:
            reason = "not_adult"
        if reason is not None or token is None:
            self._refused(
                token_id,
                reason=reason or "unknown",
                token=token,
                user_id=user_id,
                conversation_id=conversation_id,
                trace_id=trace_id,
            )
        self.tokens.consume(token)
        ctx = token.ctx if trace_id is None else replace(token.ctx, trace_id=trace_id)
        if not approve:
            declined = declined_outcome(token)
            self._record(token, "denied", "cancelled", ctx, outcome_of=declined)
            self._notice(token, "cancelled", declined)
            return ConfirmationResult(status="cancelled", token=token, outcome=declined)
        if approval is None:
            approval = Approval(approved_by=user_id or HOUSEHOLD_APPROVER)
        outcome = await token.run(replace(token, approval=approval), ctx)
        self._notice(token, "executed" if outcome.kind == "success" else "failed", outcome)
        return ConfirmationResult(status="executed", token=token, outcome=outcome)

    async def answer(
        self,
        text: str,
        *,
        language: str,
        user_id: str | None,
        conversation_id: str,
        trace_id: str | None = None,
        speaker: Speaker | None = None,
    ) -> ConsentReply | None:
        """Match the person's words against their held calls, before any model runs.

        None: nothing waits for this user here. ``other``: not a clear yes or no; the calls
        keep waiting. ``yes`` / ``no``: every call waiting for this user in this
        conversation was run or declined; a spoken turn (``speaker.heard``) answers every
        call there that needs an adult's voice too, and a yes that ``speaker`` may not give
        leaves such a call waiting, in ``refused`` (the module's doc).
        """
        waiting = [t for t in self.pending_for(conversation_id) if _answers(t, user_id, speaker)]
        if not waiting:
            return None
        names = [name for token in waiting for name in token.names]
        verdict = match_consent(text, language, extra_words=names)
        if verdict == "other":
            return ConsentReply(verdict="other")
        heard = speaker is not None and speaker.heard
        approval = Approval(
            approved_by=(speaker.user_id if speaker is not None else user_id) or HOUSEHOLD_APPROVER,
            by_voice=heard,
        )
        results: list[ConfirmationResult] = []
        refused: list[ConfirmationToken] = []
        for token in waiting:
            try:
                result = await self.resolve(
                    token.token_id,
                    approve=verdict == "yes",
                    user_id=token.user_id if heard and token.needs_voice else user_id,
                    conversation_id=conversation_id,
                    trace_id=trace_id,
                    adult=speaker is not None and speaker.may_approve,
                    approval=approval,
                )
            except ConfirmationRefusedError as err:
                if err.reason == "not_adult":
                    refused.append(token)
                continue
            results.append(result)
        return ConsentReply(verdict=verdict, results=tuple(results), refused=tuple(refused))

    async def before_turn(
        self,
        text: str,
        ctx: ToolContext,
        *,
        answerable: bool = True,
        speaker: Speaker | None = None,
    ) -> TurnConfirmations:
        """Answer the person's held calls with their words, then take what the model must hear.

        ``answerable`` False (the home's own instruction starts the turn) answers nothing:
        only the person can. The notices are taken either way (those of the people whose
        calls a voice just answered too, so the model hears what it did), unless a yes
        that ``speaker`` (who the host says speaks; None: it says nothing) may not give
        was refused (``voice_refused``): that turn asks no model, so they wait for the next.
        """
        reply = None
        if answerable:
            reply = await self.answer(
                text,
                language=ctx.language,
                user_id=ctx.user_id,
                conversation_id=ctx.conversation_id,
                trace_id=ctx.trace_id,
                speaker=speaker,
            )
        answered = () if reply is None else reply.results
        if reply is not None and reply.refused:  # no model runs: the notices wait
            return replace(turn_confirmations(answered, []), voice_refused=True)
        owners = dict.fromkeys([ctx.user_id, *(result.token.user_id for result in answered)])
        notices = [n for owner in owners for n in self.take_notices(ctx.conversation_id, owner)]
        return turn_confirmations(answered, notices)

    def peek(self, token_id: str) -> ConfirmationToken | None:
        """Return a live token without consuming it."""
        return self.tokens.get(token_id)

    def pending_for(self, conversation_id: str) -> list[ConfirmationToken]:
        """Return the calls waiting in a conversation, oldest first."""
        return [t for t in self.tokens.live() if t.conversation_id == conversation_id]

    def pending_count(self) -> int:
        """Return how many calls wait for confirmation now."""
        return len(self.tokens.live())

    def take_notices(self, conversation_id: str, user_id: str | None) -> list[ConfirmationNotice]:
        """Return, once, what one person must hear about their confirmations that ended here."""
        self.tokens.live()
        return self._notices.take(conversation_id, user_id)

    def kept(self) -> KeptNotices:
        """Return what the next engine must still tell: unheard notices, interrupted tokens."""
        return KeptNotices(
            notices=tuple(self._notices.waiting()),
            interrupted=tuple(self.tokens.closed("interrupted")),
        )

    def restore(self, kept: KeptNotices) -> None:
        """Take over what an engine before this one left untold (its notices come first)."""
        waiting = self._notices.waiting()
        self._notices = NoticeQueue()
        for notice in (*kept.notices, *waiting):
            self._notices.put(notice)
        for closed in kept.interrupted:
            self.tokens.remember(closed)

    def close(self) -> None:
        """End every waiting call unrun, out loud: audit, notice, tell the host; stop timers.

        The host is closing the engine (a reload, a restart, a shutdown, a removal): a held
        call cannot outlive it, and its person hears, next turn, that it was not performed.
        """
        ended = self.tokens.close()
        for token in ended:
            reason = UNRUN_REASONS["interrupted"]
            self._record(
                token, "interrupted", "cancelled", token.ctx, category="interrupted", detail=reason
            )
            self._notice(token, "interrupted", None)

    def _expired(self, token: ConfirmationToken) -> None:
        """End a token unrun because its time ran out: audit, notice, tell the host."""
        self._record(token, "expired", "cancelled", token.ctx)
        self._notice(token, "expired", None)

    def _refused(
        self,
        token_id: str,
        *,
        reason: RefusalReason,
        token: ConfirmationToken | None,
        user_id: str | None,
        conversation_id: str | None,
        trace_id: str | None,
    ) -> NoReturn:
        """Audit a refused confirmation under the presenter's user and conversation; raise."""
        request = _UNKNOWN_CALL if token is None else token.request
        where = conversation_id or (token.conversation_id if token is not None else "")
        ctx = ToolContext(conversation_id=where, user_id=user_id, trace_id=trace_id or "")
        ref = token_ref(token_id)
        self._audit.record(
            AuditRecord.for_call(
                request,
                ctx,
                "refused",
                "refused",
                category=reason,
                detail=REFUSALS[reason],
                token=ref,
            )
        )
        raise ConfirmationRefusedError(REFUSALS[reason], reason=reason, token_ref=ref)

    def _record(
        self,
        token: ConfirmationToken,
        decision: AuditDecision,
        outcome: ToolOutcome | CallOutcome,
        ctx: ToolContext,
        *,
        outcome_of: ToolFailure | None = None,
        reasons: tuple[str, ...] = (),
        category: str | None = None,
        detail: str | None = None,
    ) -> None:
        """Write one audit record about a token's call."""
        self._audit.record(
            AuditRecord.for_call(
                token.request,
                ctx,
                decision,
                outcome,
                category=category if outcome_of is None else outcome_of.category,
                detail=detail if outcome_of is None else outcome_of.content,
                reasons=reasons,
                token=token.ref,
            )
        )

    def _notice(
        self, token: ConfirmationToken, status: NoticeStatus, outcome: ToolOutcome | None
    ) -> None:
        """Queue what the model hears next turn (bounded); tell the host's listener."""
        self._notices.add(token, status, outcome)
        self._notify(token, status)

    def _notify(self, token: ConfirmationToken, status: ConfirmationStatus) -> None:
        """Call the host's listener; its failure never breaks a confirmation."""
        if self._listener is None:
            return
        try:
            self._listener(token, status)
        except Exception:
            LOGGER.warning("Confirmation listener failed", exc_info=True)


def _answers(token: ConfirmationToken, user_id: str | None, speaker: Speaker | None) -> bool:
    """Say whether a turn of ``user_id`` (spoken by ``speaker``) may answer ``token``.

    Its own person always may; any spoken voice in its conversation may answer a call that
    needs an adult's voice (a yes still needs one that may approve).
    """
    if token.user_id == user_id:
        return True
    return token.needs_voice and speaker is not None and speaker.heard
