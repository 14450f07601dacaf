"""Confirmation tokens: random, bound to one call, user and conversation; single use; expiring.

``TokenStore`` keeps the live tokens on the event loop, expires each on a timer (and by
the clock, for hosts whose clock is not the loop's), and remembers closed ones for a while
so a replay is named as one. What a token's end means is decided in ``held_calls``.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from ...json_types import JSONObject
from ...messages import ToolCallRequest
from ...tools.contract import ToolContext, ToolOutcome, canonical_arguments

DEFAULT_TTL = 60.0
MAX_PER_OWNER = 8
MAX_PENDING = 1024
REMEMBER_CLOSED = 3600.0
MAX_CLOSED = 1024

type RefusalReason = Literal[
    "unknown",
    "used",
    "expired",
    "interrupted",
    "wrong_user",
    "wrong_conversation",
    "tampered",
    "not_adult",
]
type HeldRun = Callable[[ConfirmationToken, ToolContext], Awaitable[ToolOutcome]]

REFUSALS: dict[RefusalReason, str] = {
    "unknown": "no such confirmation",
    "used": "this confirmation was already used",
    "expired": "this confirmation has expired",
    "interrupted": "this confirmation was cancelled when the assistant restarted",
    "wrong_user": "this confirmation belongs to another user",
    "wrong_conversation": "this confirmation belongs to another conversation",
    "tampered": "the arguments do not match the action awaiting confirmation",
    "not_adult": "only an enrolled adult can approve this action",
}


def token_ref(token_id: str) -> str:
    """Return the short hash under which a confirmation token may be logged."""
    return hashlib.sha256(token_id.encode()).hexdigest()[:16]


HOUSEHOLD_APPROVER = "household"
"""Who approved a held call in a voice that matched nobody (the audit's ``approved_by``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    """Who said yes to a held call (a user id, or the household) and whether it was spoken."""

    approved_by: str
    by_voice: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationToken:
    """A held call: what it would do, for whom, where, until when, and how to run it.

    ``request.arguments`` is the canonical JSON of the validated arguments; ``run`` is the
    call's own runner, bound when the call was held, so any approval path can run it.
    ``needs_voice``, decided when it was held, says only an enrolled adult may approve it:
    a spoken yes in an adult's voice, or the host's word that the person approving may.
    """

    token_id: str = field(repr=False)
    request: ToolCallRequest
    ctx: ToolContext
    action: JSONObject
    names: tuple[str, ...] = ()
    created_at: float
    expires_at: float
    run: HeldRun = field(repr=False, compare=False)
    needs_voice: bool = False
    approval: Approval | None = None
    """Who approved it: set only on the copy handed to its runner, for the audit."""

    @property
    def ref(self) -> str:
        """Return the hashed token id, safe for logs and the audit."""
        return token_ref(self.token_id)

    @property
    def conversation_id(self) -> str:
        """Return the conversation the token belongs to."""
        return self.ctx.conversation_id

    @property
    def user_id(self) -> str | None:
        """Return the user the token belongs to."""
        return self.ctx.user_id


@dataclass(frozen=True, slots=True, kw_only=True)
class ClosedToken:
    """A token that closed, as remembered: its hashed id, why, and how many seconds ago."""

    ref: str
    reason: RefusalReason
    age: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationResult:
    """How a resolved confirmation ended: the bound call ran (with its outcome) or not."""

    status: Literal["executed", "cancelled"]
    token: ConfirmationToken
    outcome: ToolOutcome


class TokenStore:
    """Live tokens, their timers, and a bounded memory of closed ones."""

    def __init__(
        self,
        on_expire: Callable[[ConfirmationToken], None],
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
        max_pending: int = MAX_PENDING,
        max_per_owner: int = MAX_PER_OWNER,
    ) -> None:
        """Call ``on_expire`` for every token whose time runs out (or that is pushed out).

        At most ``max_per_owner`` tokens wait per user and conversation (their oldest is
        pushed out first), so nobody's requests can push out another person's held call;
        ``max_pending`` bounds them all.
        """
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.ttl = ttl
        self._on_expire = on_expire
        self._clock = clock
        self._max_pending = max_pending
        self._max_per_owner = max_per_owner
        self._pending: dict[str, ConfirmationToken] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._closed: OrderedDict[str, tuple[float, RefusalReason]] = OrderedDict()

    def issue(
        self,
        *,
        request: ToolCallRequest,
        ctx: ToolContext,
        action: JSONObject,
        names: tuple[str, ...],
        run: HeldRun,
        needs_voice: bool = False,
    ) -> ConfirmationToken:
        """Return the live token of this call for this user and conversation, or a new one.

        A live token of the same call keeps what it asked for; one held again that asks for
        an adult's voice now asks for it too.
        """
        owner = (ctx.user_id, ctx.conversation_id)
        mine = [token for token in self.live() if _owner(token) == owner]
        for live in mine:
            if (live.request.name, live.request.arguments) == (request.name, request.arguments):
                return self._asking_voice(live) if needs_voice else live
        while len(mine) >= self._max_per_owner:
            self.expire(mine.pop(0))
        while len(self._pending) >= self._max_pending:
            self.expire(min(self._pending.values(), key=lambda t: t.created_at))
        now = self._clock()
        token = ConfirmationToken(
            token_id=secrets.token_urlsafe(24),
            request=request,
            ctx=ctx,
            action=action,
            names=names,
            created_at=now,
            expires_at=now + self.ttl,
            run=run,
            needs_voice=needs_voice,
        )
        self._pending[token.token_id] = token
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return token
        self._timers[token.token_id] = loop.call_later(self.ttl, self._timer, token.token_id)
        return token

    def live(self) -> list[ConfirmationToken]:
        """Return every live token, oldest first, after expiring those past their time."""
        now = self._clock()
        for token in [t for t in self._pending.values() if t.expires_at <= now]:
            self.expire(token)
        return list(self._pending.values())

    def get(self, token_id: str) -> ConfirmationToken | None:
        """Return a live token without consuming it."""
        self.live()
        return self._pending.get(token_id)

    def refusal(
        self,
        token_id: str,
        *,
        user_id: str | None,
        conversation_id: str | None,
        arguments: JSONObject | None,
    ) -> RefusalReason | None:
        """Return why ``token_id`` may not be used by this user here, or None when it may."""
        token = self.get(token_id)
        if token is None:
            closed = self._closed.get(token_ref(token_id))
            return "unknown" if closed is None else closed[1]
        if conversation_id is not None and token.conversation_id != conversation_id:
            return "wrong_conversation"
        if token.user_id != user_id:
            return "wrong_user"
        if arguments is not None and canonical_arguments(arguments) != token.request.arguments:
            return "tampered"
        return None

    def consume(self, token: ConfirmationToken) -> None:
        """Close a token as used: a second use is a replay."""
        self._close(token, "used")

    def expire(self, token: ConfirmationToken) -> None:
        """Close a token as expired and hand it to ``on_expire``."""
        self._close(token, "expired")
        self._on_expire(token)

    def close(self) -> list[ConfirmationToken]:
        """Stop every timer; close the live tokens unrun and return them, oldest first.

        The host is closing the engine: what those calls' ends mean is ``held_calls``' to say.
        """
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        ended = list(self._pending.values())
        for token in ended:
            self._close(token, "interrupted")
        return ended

    def closed(self, reason: RefusalReason) -> list[ClosedToken]:
        """Return the tokens still remembered as closed for ``reason``, oldest first."""
        now = self._clock()
        return [
            ClosedToken(ref=ref, reason=why, age=max(now - at, 0.0))
            for ref, (at, why) in self._closed.items()
            if why == reason
        ]

    def remember(self, closed: ClosedToken) -> None:
        """Remember a token another store closed (an engine before this one), for its time left."""
        if closed.ref in self._closed:
            return
        self._closed[closed.ref] = (self._clock() - closed.age, closed.reason)
        self._closed.move_to_end(closed.ref)
        self._forget_old()

    def _asking_voice(self, token: ConfirmationToken) -> ConfirmationToken:
        """Return the live token, now waiting for an adult's voice (its timer unchanged)."""
        if token.needs_voice:
            return token
        token = replace(token, needs_voice=True)
        self._pending[token.token_id] = token
        return token

    def _timer(self, token_id: str) -> None:
        """Expire a token when its timer fires (it may be gone already)."""
        self._timers.pop(token_id, None)
        if (token := self._pending.get(token_id)) is not None:
            self.expire(token)

    def _close(self, token: ConfirmationToken, reason: RefusalReason) -> None:
        """Drop a live token and its timer; remember it a while under ``reason``."""
        self._pending.pop(token.token_id, None)
        if (timer := self._timers.pop(token.token_id, None)) is not None:
            timer.cancel()
        self._closed[token.ref] = (self._clock(), reason)
        self._closed.move_to_end(token.ref)
        self._forget_old()

    def _forget_old(self) -> None:
        """Forget closed tokens past ``REMEMBER_CLOSED`` seconds, or beyond ``MAX_CLOSED``."""
        now = self._clock()
        while self._closed:
            oldest, (at, _) = next(iter(self._closed.items()))
            if len(self._closed) <= MAX_CLOSED and at > now - REMEMBER_CLOSED:
                break
            del self._closed[oldest]


def _owner(token: ConfirmationToken) -> tuple[str | None, str]:
    """Return who a token belongs to, and where."""
    return token.user_id, token.conversation_id
