"""``TurnRunner.start``: one companion turn, from the person's words to the stored exchange.

In order: a waiting confirmation may be answered (before any model runs), hooks add
reference text, the prompt is built from the stored history, the tool loop streams through
the output pipeline into the turn's items. One deadline covers all of it. Whatever ends
the turn (the answer, a cancel, an error, the deadline), the ``finally`` stores what the
person said and what they were really shown, marked with the outcome, and the after-turn
hooks see that outcome.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from asyncio import Task
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, replace

from ..chars import valid_text
from ..events import SentenceOutput, TextDelta, TurnOutcome, TurnResult
from ..guard.confirmations.tokens import ConfirmationResult
from ..guard.executor import Guard
from ..guard.policy import StateProbe, TargetResolver
from ..llm import ChatModel
from ..messages import AssistantMessage, ContextSnippet
from ..pipeline import PipelineConfig, build_pipeline, join_speech, speakable
from ..plugins import Hook, PluginSet, Profile, TurnContext
from ..tools.contract import ToolContext
from ..tools.registry import Tool, ToolRegistry
from .handle import Turn
from .history import ConversationHistory, amend_in, store_in
from .limits import RateLimiter, TurnLimits, within_budget
from .loop import AgentCore, SpokenLines, TurnRecord
from .prompt import PromptBuilder, UserPromptBlock
from .stored import Initiator, StoredTurn, as_heard
from .usage import UsageCounters

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    """A snapshot of one persona: a running turn keeps the one it started with."""

    profile: Profile
    plugins: PluginSet
    model: ChatModel


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """What the host knows about one utterance, and what only it can supply."""

    text: str
    context: ToolContext
    history: ConversationHistory
    lines: SpokenLines
    device_id: str | None = None
    host_instructions: str = ""
    host_tools: Sequence[Tool] = ()
    host_targets: TargetResolver | None = None
    host_state: StateProbe | None = None
    host_hooks: Sequence[Hook] = ()
    window: ConversationHistory | None = None
    """Recent exchanges across conversations (memory tier 1): sent instead of ``history``
    when set, and every turn is added to both."""
    said: int = 0
    """How many characters the person said (the text may have been cut to the limit)."""
    initiator: Initiator = "person"
    """``proactive``: the home speaks first; ``text`` is its instruction, not the person's."""


FIRST_CLAUSE_CUT = True
"""Whether a reply's first sentence may end at a comma (``faster_first_response``).

Kept on a measured gain: ``benchmarks/voice.py`` (README, figures). A voice that speaks the
turn's first sentence ahead must cut the same way, so it shares this value."""


def pipeline_config(profile: Profile) -> PipelineConfig:
    """Return the output pipeline settings for a profile: its tags, voice-first cuts."""
    return PipelineConfig(
        action_tags=frozenset(profile.output.actions),
        faster_first_response=FIRST_CLAUSE_CUT,
        show_thinking=True,
    )


class TurnRunner:
    """Start turns for personas, every tool call behind the host's guard."""

    def __init__(
        self,
        guard: Guard | None = None,
        usage: UsageCounters | None = None,
        limits: TurnLimits | None = None,
    ) -> None:
        """Use ``guard`` for every turn (a permissive one without rules by default)."""
        self.guard = Guard() if guard is None else guard
        self.usage = UsageCounters() if usage is None else usage
        self.limits = TurnLimits() if limits is None else limits
        self._pace = RateLimiter(self.limits.turns_per_minute)
        self._running: set[asyncio.Task[None]] = set()
        self._conversations: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    def start(self, persona: Persona, request: TurnRequest) -> Turn:
        """Start a turn in a task of its own and return its handle at once.

        The person's words are made valid text here, at the boundary.
        """
        text = valid_text(request.text)
        request = replace(request, said=len(text), text=text[: self.limits.max_input_chars])
        trace_id = request.context.trace_id
        turn = Turn(
            trace_id,
            lambda result: _after_playback(persona, request, result),
            lambda heard, outcome: self._amend(request, heard, outcome),
        )
        task = self._track(self._drive(turn, persona, request), name=f"turn {trace_id}")
        task.add_done_callback(lambda _task: _never_started(turn))
        turn.bind(task)
        return turn

    def _amend(self, request: TurnRequest, heard: str, outcome: TurnOutcome) -> None:
        """Mark the stored turn ``outcome`` after ``heard`` (spoken over, or never heard)."""
        self._track(amend_in(_histories(request), request.context.trace_id, heard, outcome))

    def _track(self, work: Coroutine[None, None, None], name: str | None = None) -> Task[None]:
        """Run ``work`` in a task of its own that ``drain`` waits for."""
        task = asyncio.create_task(work, name=name)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def confirm(
        self, token_id: str, *, approve: bool, user_id: str | None
    ) -> ConfirmationResult:
        """Approve or deny a held call from outside a conversation (a dashboard, a phone)."""
        return await self.guard.confirmations.resolve(token_id, approve=approve, user_id=user_id)

    async def drain(self, grace: float) -> None:
        """Give running turns ``grace`` seconds to finish, then cancel what is left."""
        if self._running:
            await asyncio.wait(set(self._running), timeout=grace)
        for task in set(self._running):
            task.cancel()

    async def _drive(self, turn: Turn, persona: Persona, request: TurnRequest) -> None:
        """Run the turn under its deadline; whatever ends it, store it and tell the hooks.

        Turns of one conversation run one after the other (the later one waits, within its
        deadline), so their history never interleaves.
        """
        record = TurnRecord()
        ctx = request.context
        turn_ctx = _turn_context(persona, request)
        lock = self._conversations.setdefault(ctx.conversation_id, asyncio.Lock())
        held = False
        cancelled_early = turn.begin()
        async with persona.plugins.lease():
            try:
                async with asyncio.timeout(persona.profile.turn_deadline):
                    await lock.acquire()
                    held = True
                    if cancelled_early:  # cancelled before its task ran: stored, not run
                        record.outcome = turn.cancel_outcome
                        record.reason = turn.cancel_reason or ""
                    elif self._pace.allow(*_pace_keys(ctx.user_id, request.device_id)):
                        turn_ctx = await self._run(turn, persona, request, record, turn_ctx)
                    else:
                        record.outcome, record.reason = "failed", "too many turns a minute"
                        _say(turn, request.lines.busy, "")
            except TimeoutError:
                record.outcome, record.reason = "timed_out", "the turn's deadline passed"
                _say(turn, request.lines.deadline, turn.shown)
            except asyncio.CancelledError:
                record.outcome = turn.cancel_outcome
                record.reason = turn.cancel_reason or "cancelled"
                if (task := asyncio.current_task()) is not None:
                    task.uncancel()
            except Exception:
                LOGGER.exception("Turn %s failed", ctx.trace_id)
                record.outcome, record.reason = "failed", "the turn failed"
                _say(turn, request.lines.unreachable, turn.shown)
            finally:
                turn.settle()
                result = self._result(turn, record)
                await self._store(request, record, result)
                if held:
                    lock.release()
                self.usage.count_tokens(
                    conversation_id=ctx.conversation_id, user_id=ctx.user_id, usage=result.usage
                )
                outcome_ctx = replace(turn_ctx, outcome=result.outcome)
                said = result.text if result.outcome == "complete" else result.shown
                persona.plugins.hooks.after_turn(
                    request.text, said, outcome_ctx, request.host_hooks
                )
                turn.finish(result)

    async def _run(
        self,
        turn: Turn,
        persona: Persona,
        request: TurnRequest,
        record: TurnRecord,
        turn_ctx: TurnContext,
    ) -> TurnContext:
        """Answer a waiting confirmation, gather context, run the loop into the turn."""
        profile, ctx = persona.profile, request.context
        registry = ToolRegistry([*persona.plugins.tools, *request.host_tools])
        executor = self.guard.executor(
            registry, profile.policy, resolver=request.host_targets, state=request.host_state
        )
        proactive = request.initiator == "proactive"
        confirmations = await self.guard.confirmations.before_turn(
            request.text, ctx, answerable=not proactive
        )
        cut = _cut_notice(request.said, request.text)
        for event in confirmations.events:
            record.events.append(event)
            turn.put(event)
        history = await request.history.load()
        turn_ctx = replace(turn_ctx, first_turn=not history)
        if request.window is not None:
            history = await request.window.load()
        history = within_budget(history, self.limits.history_tokens)
        hooks = persona.plugins.hooks
        snippets = await hooks.before_turn(request.text, turn_ctx, request.host_hooks)
        block = UserPromptBlock(
            text=request.text,
            context=(*confirmations.notices, *snippets, *cut),
            proactive=proactive,
        )
        messages = PromptBuilder(profile, extra_instructions=request.host_instructions).build(
            history, block
        )
        core = AgentCore(persona.model, executor, request.lines, max_rounds=profile.max_rounds)
        pipeline = build_pipeline(pipeline_config(profile))
        items = persona.plugins.transform(pipeline(core.run_turn(messages, ctx, record)))
        async for item in items:
            turn.put(item)
        return turn_ctx

    def _result(self, turn: Turn, record: TurnRecord) -> TurnResult:
        """Sum up the turn from its record and what the host took."""
        return TurnResult(
            outcome=record.outcome,
            text=record.text,
            shown=turn.shown,
            spoken=join_speech(turn.spoken),
            tool_calls=tuple(record.events),
            rounds=record.rounds,
            usage=dict(record.usage),
            reason=record.reason,
        )

    @staticmethod
    async def _store(request: TurnRequest, record: TurnRecord, result: TurnResult) -> None:
        """Add the exchange to the conversation (written to disk later); never raise."""
        heard = result.shown if result.outcome in ("interrupted", "timed_out") else None
        messages = as_heard(
            [*record.messages, AssistantMessage(content="".join(record.partial))], heard
        )
        stored = StoredTurn(
            user=request.text,
            messages=messages,
            outcome=result.outcome,
            time=time.time(),
            initiator=request.initiator,
            trace_id=request.context.trace_id,
        )
        await store_in(_histories(request), stored, request.context.conversation_id)


def _histories(request: TurnRequest) -> tuple[ConversationHistory, ...]:
    """Return where a turn is stored: its conversation, and the recent window if it has one."""
    return (request.history, *(() if request.window is None else (request.window,)))


def _never_started(turn: Turn) -> None:
    """End a turn whose task was cancelled before it ran (by ``drain``): no ``finally`` did."""
    if not turn.result.done():
        turn.finish(
            TurnResult(outcome="interrupted", text="", reason=turn.cancel_reason or "cancelled")
        )


def _pace_keys(user_id: str | None, device_id: str | None) -> tuple[str, ...]:
    """Return whose pace a turn counts against: its person and its device, as known."""
    keys = (
        *((f"user:{user_id}",) if user_id else ()),
        *((f"device:{device_id}",) if device_id else ()),
    )
    return keys or ("anonymous",)


def _cut_notice(said: int, text: str) -> tuple[ContextSnippet, ...]:
    """Tell the model the person's words were cut to the limit, if they were."""
    if said <= len(text):
        return ()
    note = f"The person's message had {said} characters; only the first {len(text)} are shown."
    return (ContextSnippet(source="input", text=note),)


def _say(turn: Turn, text: str, shown: str) -> None:
    """Put a host line into the turn's items (text and one spoken sentence)."""
    line = f"\n{text}" if shown and not shown.endswith("\n") else text
    turn.put(TextDelta(text=line))
    turn.put(SentenceOutput(display_text=line, tts_text=speakable(text)))


def _after_playback(persona: Persona, request: TurnRequest, result: TurnResult) -> None:
    """Run ``on_after_playback`` once the turn's audio has played, if the turn spoke."""
    if not result.spoken:
        return
    turn_ctx = _turn_context(persona, request, outcome=result)
    persona.plugins.hooks.after_playback(request.text, result.shown, turn_ctx, request.host_hooks)


def _turn_context(
    persona: Persona, request: TurnRequest, *, outcome: TurnResult | None = None
) -> TurnContext:
    """Return what the hooks are told about this turn (its outcome, once it has one)."""
    ctx = request.context
    return TurnContext(
        conversation_id=ctx.conversation_id,
        profile_id=persona.profile.id,
        language=ctx.language,
        user_id=ctx.user_id,
        device_id=request.device_id,
        outcome=None if outcome is None else outcome.outcome,
        proactive=request.initiator == "proactive",
    )
