"""Confirmation tokens: random, bound to one call, user and conversation; single use; expiring."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NoReturn

from ..errors import ConfirmationRefusedError
from ..json_types import JSONObject
from .contract import ToolContext, canonical_arguments
from .redact import token_ref
from .targets import Target

DEFAULT_TTL = 60.0
DEFAULT_MAX_PENDING = 64
REMEMBER_CLOSED = 3600.0
MAX_CLOSED = 1024

type Clock = Callable[[], float]
type RefusalReason = Literal[
    "unknown", "used", "expired", "wrong_user", "wrong_conversation", "tampered"
]

_MESSAGES: dict[RefusalReason, str] = {
    "unknown": "no such confirmation",
    "used": "this confirmation was already used",
    "expired": "this confirmation has expired",
    "wrong_user": "this confirmation belongs to another user",
    "wrong_conversation": "this confirmation belongs to another conversation",
    "tampered": "the arguments do not match the action awaiting confirmation",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationToken:
    """A call that waits for the person: what it would do, for whom, where, until when."""

    token_id: str = field(repr=False)
    tool_id: str
    call_id: str
    arguments: str
    user_id: str | None
    conversation_id: str
    trace_id: str
    language: str
    agent_id: str
    action: JSONObject
    targets: tuple[Target, ...] = ()
    created_at: float
    expires_at: float

    @property
    def ref(self) -> str:
        """Return the hashed token id, safe for logs and the audit."""
        return token_ref(self.token_id)

    def context(self, trace_id: str | None = None) -> ToolContext:
        """Return the context of the original call, to run it under."""
        return ToolContext(
            conversation_id=self.conversation_id,
            user_id=self.user_id,
            trace_id=trace_id or self.trace_id,
            language=self.language,
            agent_id=self.agent_id,
        )


class ConfirmationBook:
    """Pending confirmations on the event loop; closed ones are remembered to refuse replays."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Clock = time.monotonic,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        """Set the lifetime in seconds, the clock, and how many may wait at once."""
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.ttl = ttl
        self._clock = clock
        self._max_pending = max_pending
        self._pending: dict[str, ConfirmationToken] = {}
        self._closed: OrderedDict[str, tuple[float, RefusalReason]] = OrderedDict()
        self._expired: list[ConfirmationToken] = []

    def issue(
        self,
        *,
        tool_id: str,
        call_id: str,
        args: JSONObject,
        ctx: ToolContext,
        action: JSONObject,
        targets: tuple[Target, ...] = (),
    ) -> ConfirmationToken:
        """Create a token for a call that must wait, or return the live one for the same call.

        The same tool and arguments for the same user and conversation share one token, so
        a model that asks twice cannot make one "yes" run the action twice. The oldest
        token expires when too many wait.
        """
        self._collect()
        arguments = canonical_arguments(args)
        for live in self._pending.values():
            if (live.tool_id, live.arguments, live.user_id, live.conversation_id) == (
                tool_id,
                arguments,
                ctx.user_id,
                ctx.conversation_id,
            ):
                return live
        now = self._clock()
        token = ConfirmationToken(
            token_id=secrets.token_urlsafe(24),
            tool_id=tool_id,
            call_id=call_id,
            arguments=arguments,
            user_id=ctx.user_id,
            conversation_id=ctx.conversation_id,
            trace_id=ctx.trace_id,
            language=ctx.language,
            agent_id=ctx.agent_id,
            action=action,
            targets=targets,
            created_at=now,
            expires_at=now + self.ttl,
        )
        while len(self._pending) >= self._max_pending:
            oldest = min(self._pending.values(), key=lambda t: t.created_at)
            self._expire(oldest)
        self._pending[token.token_id] = token
        return token

    def pending_count(self) -> int:
        """Return how many calls wait for confirmation now."""
        self._collect()
        return len(self._pending)

    def pending_for(self, conversation_id: str) -> list[ConfirmationToken]:
        """Return the live tokens of a conversation, oldest first."""
        self._collect()
        return [t for t in self._pending.values() if t.conversation_id == conversation_id]

    def peek(self, token_id: str) -> ConfirmationToken | None:
        """Return a live token without consuming it."""
        self._collect()
        return self._pending.get(token_id)

    def take(
        self,
        token_id: str,
        *,
        user_id: str | None,
        conversation_id: str,
        arguments: JSONObject | None = None,
    ) -> ConfirmationToken:
        """Check every binding and consume the token; raise ``ConfirmationRefusedError``.

        A wrong user, conversation or arguments leaves the token waiting for its owner.
        """
        self._collect()
        token = self._pending.get(token_id)
        if token is None:
            closed = self._closed.get(token_ref(token_id))
            self._refuse(token_id, "unknown" if closed is None else closed[1])
        if token.conversation_id != conversation_id:
            self._refuse(token_id, "wrong_conversation")
        if token.user_id != user_id:
            self._refuse(token_id, "wrong_user")
        if arguments is not None and canonical_arguments(arguments) != token.arguments:
            self._refuse(token_id, "tampered")
        del self._pending[token_id]
        self._close(token.ref, "used")
        return token

    def cancel(self, token_id: str) -> ConfirmationToken | None:
        """Drop a waiting token without running it (the host's own cancel); return it."""
        token = self._pending.pop(token_id, None)
        if token is not None:
            self._close(token.ref, "used")
        return token

    def expire_due(self) -> list[ConfirmationToken]:
        """Return the tokens that expired since the last call, each exactly once."""
        self._collect()
        expired, self._expired = self._expired, []
        return expired

    def next_expiry(self) -> float | None:
        """Return the clock time at which the next token expires, or None."""
        return min((t.expires_at for t in self._pending.values()), default=None)

    def _collect(self) -> None:
        """Move every token past its expiry out of the pending set."""
        now = self._clock()
        for token in [t for t in self._pending.values() if t.expires_at <= now]:
            self._expire(token)

    def _expire(self, token: ConfirmationToken) -> None:
        """Expire one token: no longer usable, reported once by ``expire_due``."""
        del self._pending[token.token_id]
        self._close(token.ref, "expired")
        self._expired.append(token)

    def _close(self, ref: str, reason: RefusalReason) -> None:
        """Remember a closed token for a while so a replay is named as one."""
        now = self._clock()
        self._closed[ref] = (now, reason)
        self._closed.move_to_end(ref)
        while self._closed:
            oldest_ref, (at, _) = next(iter(self._closed.items()))
            if len(self._closed) <= MAX_CLOSED and at > now - REMEMBER_CLOSED:
                break
            del self._closed[oldest_ref]

    def _refuse(self, token_id: str, reason: RefusalReason) -> NoReturn:
        """Raise the refusal for a token."""
        raise ConfirmationRefusedError(
            _MESSAGES[reason], reason=reason, token_ref=token_ref(token_id)
        )
