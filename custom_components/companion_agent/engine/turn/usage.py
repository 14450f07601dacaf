"""Token and call counters per conversation, user and tool, for sensors and diagnostics.

Calls are counted from the audit records the guard writes (``UsageCounters`` is an audit
sink); tokens, and what the reply check did (claims corrected, speech cut), from each
turn's result.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

from ..audit import AuditRecord, CallOutcome
from ..events import TurnResult
from ..json_types import JSONObject

ANONYMOUS = "anonymous"
DEFAULT_MAX_CONVERSATIONS = 256


@dataclass(slots=True, kw_only=True)
class Tally:
    """Counts for one conversation, user or tool."""

    calls: int = 0
    succeeded: int = 0
    failed: int = 0
    pending: int = 0
    cancelled: int = 0
    refused: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    corrected_claims: int = 0
    """Sentences that claimed a change no call made, replaced by the persona's correction."""
    speech_cut: int = 0
    """Replies whose speech ended before their text (too long, or repeating itself)."""

    def add_call(self, outcome: CallOutcome) -> None:
        """Count one call by how it ended."""
        self.calls += 1
        match outcome:
            case "success":
                self.succeeded += 1
            case "failure":
                self.failed += 1
            case "pending":
                self.pending += 1
            case "cancelled":
                self.cancelled += 1
            case "refused":
                self.refused += 1

    def add_tokens(self, usage: Mapping[str, int]) -> None:
        """Add a turn's token usage."""
        self.prompt_tokens += usage.get("prompt_tokens", 0)
        self.completion_tokens += usage.get("completion_tokens", 0)
        self.total_tokens += usage.get("total_tokens", 0)

    def add_checks(self, result: TurnResult) -> None:
        """Add what the reply check did to a turn's reply."""
        self.corrected_claims += result.corrected
        self.speech_cut += result.speech_cut is not None

    def as_json(self) -> JSONObject:
        """Return the counts as JSON."""
        return dict(asdict(self))


class UsageCounters:
    """Counters the host exposes; conversations are bounded, oldest dropped first."""

    def __init__(self, *, max_conversations: int = DEFAULT_MAX_CONVERSATIONS) -> None:
        """Start at zero."""
        self.total = Tally()
        self._max_conversations = max_conversations
        self._conversations: OrderedDict[str, Tally] = OrderedDict()
        self._users: dict[str, Tally] = {}
        self._tools: dict[str, Tally] = {}

    def record(self, entry: AuditRecord) -> None:
        """Count the call an audit record describes."""
        self.count_call(
            conversation_id=entry.conversation_id,
            user_id=entry.user_id,
            tool_id=entry.tool_id,
            outcome=entry.outcome,
        )

    def count_call(
        self, *, conversation_id: str, user_id: str | None, tool_id: str, outcome: CallOutcome
    ) -> None:
        """Count one tool call (or one confirmation's end) for its conversation, user, tool."""
        for tally in (
            self.total,
            self._conversation(conversation_id),
            self._users.setdefault(user_id or ANONYMOUS, Tally()),
            self._tools.setdefault(tool_id, Tally()),
        ):
            tally.add_call(outcome)

    def count_tokens(
        self, *, conversation_id: str, user_id: str | None, usage: Mapping[str, int]
    ) -> None:
        """Add a turn's token usage (``TurnResult.usage``) to its conversation and user."""
        for tally in (
            self.total,
            self._conversation(conversation_id),
            self._users.setdefault(user_id or ANONYMOUS, Tally()),
        ):
            tally.add_tokens(usage)

    def count_checks(
        self, *, conversation_id: str, user_id: str | None, result: TurnResult
    ) -> None:
        """Add what the reply check did to a turn (``TurnResult``) to its conversation and user."""
        if not result.corrected and result.speech_cut is None:
            return
        for tally in (
            self.total,
            self._conversation(conversation_id),
            self._users.setdefault(user_id or ANONYMOUS, Tally()),
        ):
            tally.add_checks(result)

    def conversation(self, conversation_id: str) -> Tally:
        """Return a copy of a conversation's counts."""
        return replace(self._conversations.get(conversation_id) or Tally())

    def user(self, user_id: str | None) -> Tally:
        """Return a copy of a user's counts."""
        return replace(self._users.get(user_id or ANONYMOUS) or Tally())

    def tool(self, tool_id: str) -> Tally:
        """Return a copy of a tool's counts."""
        return replace(self._tools.get(tool_id) or Tally())

    def snapshot(self) -> JSONObject:
        """Return every count as JSON, for diagnostics."""
        return {
            "total": self.total.as_json(),
            "conversations": {k: v.as_json() for k, v in self._conversations.items()},
            "users": {k: v.as_json() for k, v in self._users.items()},
            "tools": {k: v.as_json() for k, v in self._tools.items()},
        }

    def _conversation(self, conversation_id: str) -> Tally:
        """Return the live tally of a conversation, creating it and keeping the bound."""
        tally = self._conversations.get(conversation_id)
        if tally is None:
            tally = self._conversations[conversation_id] = Tally()
            while len(self._conversations) > self._max_conversations:
                self._conversations.popitem(last=False)
        else:
            self._conversations.move_to_end(conversation_id)
        return tally
