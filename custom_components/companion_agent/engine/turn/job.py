"""``TurnJob``: one started turn as the runner holds it, and what happens when it ends.

Whatever ends a turn, ``store_turn`` adds what the person said and what they were really
shown to its conversation (one exchange, in the person's recent window too when the turn
reads it), dated when the person spoke; ``after_playback`` runs the hooks once its audio
has played; ``end_unstarted`` ends a turn whose task never ran.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..events import TurnResult
from ..pipeline import join_speech
from ..plugins import TurnContext
from .disown import Disown
from .history import ConversationHistory, HistoryView, store_in
from .loop import TurnRecord
from .request import Persona, TurnRequest
from .sink import TurnSink
from .stored import StoredTurn, as_heard


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnJob:
    """One started turn: its request (words made valid and cut), where it is stored, its sink."""

    request: TurnRequest
    history: ConversationHistory
    """Where the turn is stored (its conversation; the person's window too, if it reads it)."""
    window: HistoryView | None
    input_chars: int
    """How many characters the person said (the text may have been cut to the limit)."""
    sink: TurnSink
    began: float
    """When the person spoke (``time.time()``)."""
    disown: Disown | None = None
    """Takes back the last exchange stored as the person's ("that wasn't me"); None: the
    host keeps no such thing, and there is nothing to take back."""

    @property
    def persona(self) -> Persona:
        """Return the persona the turn runs as."""
        return self.request.persona


def turn_result(sink: TurnSink, record: TurnRecord) -> TurnResult:
    """Sum up the turn from its record and what the host took."""
    return TurnResult(
        outcome=record.outcome,
        text=record.text,
        shown=sink.shown,
        spoken=join_speech(sink.spoken),
        tool_calls=tuple(record.events),
        rounds=record.rounds,
        usage=dict(record.usage),
        reason=record.reason,
        speech_cut=record.speech_cut,
        corrected=len(record.corrections),
    )


async def store_turn(job: TurnJob, record: TurnRecord, result: TurnResult) -> None:
    """Add the exchange to the conversation (written to disk later); never raise."""
    request = job.request
    heard = result.shown if result.outcome in ("interrupted", "timed_out") else None
    messages = as_heard(record.as_said(), heard)
    stored = StoredTurn(
        user=request.text,
        messages=messages,
        outcome=result.outcome,
        time=time.time(),
        initiator=request.initiator,
        trace_id=request.context.trace_id,
        began=job.began,
        reason=(result.reason or "") if result.outcome in ("failed", "timed_out") else "",
        speech_cut=result.speech_cut,
        lines=record.lines(),
    )
    await store_in(job.history, stored, request.context.conversation_id)


def end_unstarted(sink: TurnSink) -> None:
    """End a turn whose task was cancelled before it ran (by ``drain``): no ``finally`` did."""
    if not sink.result.done():
        sink.finish(
            TurnResult(outcome="interrupted", text="", reason=sink.cancel_reason or "cancelled")
        )


def after_playback(job: TurnJob, result: TurnResult) -> None:
    """Run ``on_after_playback`` once the turn's audio has played, if the turn spoke."""
    if not result.spoken:
        return
    turn_ctx = turn_context(job, outcome=result)
    hooks = job.persona.plugins.hooks
    hooks.after_playback(job.request.text, result.shown, turn_ctx, job.request.host_hooks)


def turn_context(job: TurnJob, *, outcome: TurnResult | None = None) -> TurnContext:
    """Return what the hooks are told about this turn (its outcome, once it has one)."""
    request = job.request
    ctx = request.context
    return TurnContext(
        conversation_id=ctx.conversation_id,
        profile_id=job.persona.profile.id,
        language=ctx.language,
        user_id=ctx.user_id,
        device_id=request.device_id,
        outcome=None if outcome is None else outcome.outcome,
        proactive=request.initiator == "proactive",
    )
