"""``TurnRunner.start``: one companion turn, from the person's words to the stored exchange.

In order: "that wasn't me" takes the last exchange stored as the person's back
(``disown.py``) and says so, without a model; a waiting confirmation may be answered
(before any model runs; a yes that needs an adult's voice and lacks one is refused out
loud, again without a model), hooks add
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
from collections.abc import Coroutine
from dataclasses import replace
from types import MappingProxyType

from ..chars import cut_text, valid_text
from ..events import SentenceOutput, TextDelta, TurnOutcome
from ..guard.executor import Guard
from ..llm import ChatModel
from ..llm.adapter import ObservedModel
from ..messages import AssistantMessage
from ..pipeline import (
    PipelineConfig,
    build_pipeline,
    first_guesses,
    speakable,
    speech_config,
)
from ..plugins import Profile, TurnContext
from ..tools.holding import HoldingLines, language_chain
from ..tools.registry import Tool, ToolRegistry
from ..vision import VisionSummarizer, camera_tool
from .disown import Disown, Disowned, is_disowning
from .handle import Turn
from .history import ConversationHistory, HistoryView, amend_in
from .job import TurnJob, after_playback, end_unstarted, store_turn, turn_context, turn_result
from .limits import (
    RateLimiter,
    TurnLimits,
    cut_notice,
    pace_keys,
    turn_deadline,
    within_budget,
)
from .loop import ToolLoop, TurnRecord
from .prompt import PromptBuilder, UserPromptBlock
from .reply_check import ReplyCheck, ReplyRules
from .request import Persona, TurnRequest
from .sink import TurnSink
from .usage import UsageCounters

LOGGER = logging.getLogger(__name__)


def pipeline_config(profile: Profile) -> PipelineConfig:
    """Return the output pipeline settings for a profile: its tag vocabulary, shown thinking."""
    return speech_config(profile.output.tags, show_thinking=True)


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
        self._amending: set[asyncio.Task[None]] = set()
        self._conversations: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    def start(
        self,
        request: TurnRequest,
        history: ConversationHistory,
        window: HistoryView | None = None,
        *,
        disown: Disown | None = None,
    ) -> Turn:
        """Start a turn in a task of its own and return its handle at once.

        The turn reads ``history`` (or the recent ``window``, when given: memory tier 1)
        and is stored once, in ``history`` (a view of the exchange store that puts it in the
        window too). The person's words are made valid text here, at the boundary.
        ``disown`` answers "that wasn't me" (None: nothing is kept to take back).
        """
        text = valid_text(request.text)
        request = replace(request, text=cut_text(text, self.limits.max_input_chars))
        trace_id = request.context.trace_id
        persona = request.persona
        allowed = turn_deadline(
            persona.profile.turn_deadline, persona.models.chat if persona.models else None
        )
        deadline = asyncio.get_running_loop().time() + allowed
        sink = TurnSink(
            trace_id,
            deadline,
            lambda result: after_playback(job, result),
            lambda heard, outcome: self._amend(job, heard, outcome),
        )
        job = TurnJob(
            request=request,
            history=history,
            window=window,
            input_chars=len(text),
            sink=sink,
            began=time.time(),
            disown=disown,
        )
        task = self._track(self._drive(job), name=f"turn {trace_id}")
        task.add_done_callback(lambda _task: end_unstarted(sink))
        sink.bind(task)
        return Turn(sink)

    def _amend(self, job: TurnJob, heard: str, outcome: TurnOutcome) -> None:
        """Mark the stored turn ``outcome`` after ``heard`` (spoken over, or never heard)."""
        task = self._track(amend_in(job.history, job.request.context.trace_id, heard, outcome))
        self._amending.add(task)
        task.add_done_callback(self._amending.discard)

    async def flush(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for the stored turns still being amended.

        A turn that has just ended tells its finish listeners from the loop, and one of them
        may amend it (the person spoke over it): they run first, so that amend is waited for.
        """
        await asyncio.sleep(0)
        if self._amending:
            await asyncio.wait(set(self._amending), timeout=grace)

    def _track(self, work: Coroutine[None, None, None], name: str | None = None) -> Task[None]:
        """Run ``work`` in a task of its own that ``drain`` waits for."""
        task = asyncio.create_task(work, name=name)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def drain(self, grace: float) -> None:
        """Give running turns ``grace`` seconds to finish, then cancel what is left.

        A cancelled turn still stores itself: that is waited for too, ``grace`` at most.
        """
        if self._running:
            await asyncio.wait(set(self._running), timeout=grace)
        left = set(self._running)
        for task in left:
            task.cancel()
        if left:
            await asyncio.wait(left, timeout=grace)

    async def _drive(self, job: TurnJob) -> None:
        """Run the turn under its deadline; whatever ends it, store it and tell the hooks.

        Turns of one conversation run one after the other (the later one waits, within its
        deadline), so their history never interleaves.
        """
        record = TurnRecord()
        request, sink = job.request, job.sink
        ctx = request.context
        turn_ctx = turn_context(job)
        lock = self._conversations.setdefault(ctx.conversation_id, asyncio.Lock())
        held = False
        cancelled_early = sink.begin()
        async with job.persona.plugins.lease():
            try:
                async with asyncio.timeout_at(sink.deadline):
                    await lock.acquire()
                    held = True
                    if cancelled_early:  # cancelled before its task ran: stored, not run
                        record.outcome = sink.cancel_outcome
                        record.reason = sink.cancel_reason or ""
                    elif self._pace.allow(*pace_keys(ctx.user_id, request.device_id)):
                        turn_ctx = await self._run(job, record, turn_ctx)
                    else:
                        record.outcome, record.reason = "failed", "too many turns a minute"
                        _say(sink, request.lines.busy, "")
            except TimeoutError:
                record.outcome, record.reason = "timed_out", "the turn's deadline passed"
                _say(sink, request.lines.deadline, sink.shown)
            except asyncio.CancelledError:
                record.outcome = sink.cancel_outcome
                record.reason = sink.cancel_reason or "cancelled"
                if (task := asyncio.current_task()) is not None:
                    task.uncancel()
            except Exception:
                LOGGER.exception("Turn %s failed", ctx.trace_id)
                record.outcome, record.reason = "failed", "the turn failed"
                _say(sink, request.lines.unreachable, sink.shown)
            finally:
                sink.storing()
                result = turn_result(sink, record)
                await store_turn(job, record, result)
                if held:
                    lock.release()
                self.usage.count_tokens(
                    conversation_id=ctx.conversation_id, user_id=ctx.user_id, usage=result.usage
                )
                self.usage.count_checks(
                    conversation_id=ctx.conversation_id, user_id=ctx.user_id, result=result
                )
                outcome_ctx = replace(turn_ctx, outcome=result.outcome)
                said = result.text if result.outcome == "complete" else result.shown
                job.persona.plugins.hooks.after_turn(
                    request.text, said, outcome_ctx, request.host_hooks
                )
                sink.finish(result)

    async def _run(self, job: TurnJob, record: TurnRecord, turn_ctx: TurnContext) -> TurnContext:
        """Answer a waiting confirmation, gather context, run the loop into the turn."""
        request, persona = job.request, job.persona
        profile, ctx = persona.profile, request.context
        registry = ToolRegistry(
            [*persona.plugins.tools, *request.host_tools, *camera_tools(request)]
        )
        rules = persona.applied_rules
        executor = self.guard.executor(
            registry,
            rules.guard_rules(),
            resolver=request.host_targets,
            state=request.host_state,
            voice_approval=rules.voice_approval,
        )
        proactive = request.initiator == "proactive"
        if not proactive and is_disowning(request.text):
            disowned = Disowned() if job.disown is None else await job.disown(ctx)
            lines = request.lines
            _answer(job, record, lines.disowned if disowned.moved else lines.nothing_disowned)
            return turn_ctx
        confirmations = await self.guard.confirmations.before_turn(
            request.text, ctx, answerable=not proactive, speaker=request.speaker
        )
        cut = cut_notice(job.input_chars, request.text)
        for event in confirmations.events:
            record.events.append(event)
            job.sink.put(event)
        if confirmations.voice_refused:
            _answer(job, record, request.lines.voice_refused)
            return turn_ctx
        history = await job.history.load()
        turn_ctx = replace(turn_ctx, first_turn=not history)
        if job.window is not None:
            history = await job.window.load()
        history = within_budget(history, self.limits.history_tokens)
        hooks = persona.plugins.hooks
        snippets = await hooks.before_turn(request.text, turn_ctx, request.host_hooks)
        block = UserPromptBlock(
            text=request.text,
            context=(*rules.notices(), *confirmations.notices, *snippets, *cut),
            proactive=proactive,
        )
        messages = PromptBuilder(profile, extra_instructions=request.host_instructions).build(
            history, block
        )
        model = chat_model(request)
        core = ToolLoop(
            model,
            executor,
            request.lines,
            max_rounds=profile.max_rounds,
            holding=holding_lines(profile, ctx.language, registry),
        )
        config = pipeline_config(profile)
        check = ReplyCheck(reply_rules(profile, registry), record)
        replies = core.run_turn(messages, ctx, record)
        if not persona.plugins.transforms:  # a voice may begin on the first sentence's end
            replies = first_guesses(
                replies,
                config,
                lambda: build_pipeline(config),
                lambda guess: job.sink.guess(check.guess(guess)),
            )
        checked = check.apply(build_pipeline(config)(replies), job.sink.put)
        items = persona.plugins.transform(checked)
        async for item in items:
            job.sink.put(item)
        if record.finish_reason == "repetition" and record.speech_cut is None:
            record.speech_cut = "repeated"  # an exact loop, stopped as the model wrote it
        return turn_ctx


def chat_model(request: TurnRequest) -> ChatModel:
    """Return the persona's chat model, its calls told to the host when it traces the turn."""
    persona = request.persona
    return _traced(request, persona.model, "chat", _model_name(persona, "chat"))


def camera_tools(request: TurnRequest) -> list[Tool]:
    """Return the camera tool when the host has cameras and the persona can see them."""
    persona, source = request.persona, request.host_cameras
    if source is None or (persona.vision is None and not persona.chat_sees_images):
        return []
    summarizer = None
    if persona.vision is not None and not persona.chat_sees_images:
        vision = _traced(request, persona.vision, "vision", _model_name(persona, "vision"))
        summarizer = VisionSummarizer(vision)
    tool = camera_tool(source, sees_images=persona.chat_sees_images, summarizer=summarizer)
    return [] if tool is None else [tool]


def _traced(request: TurnRequest, model: ChatModel, role: str, name: str) -> ChatModel:
    """Return ``model`` with each call told to the host's listener (unchanged without one)."""
    listener = request.on_model_call
    if listener is None:
        return model
    observed = model if isinstance(model, ObservedModel) else ObservedModel(model)
    return observed.traced(role, listener, name)


def _model_name(persona: Persona, role: str) -> str:
    """Return the name of the persona's model for ``role``, as far as it is known."""
    models = persona.models
    if models is None:
        return ""
    settings = models.vision if role == "vision" else models.chat
    return "" if settings is None else settings.model


def reply_rules(profile: Profile, registry: ToolRegistry) -> ReplyRules:
    """Return what the turn's replies are checked against: the profile's bound and claims."""
    return ReplyRules(
        claims=profile.claims,
        spoken_seconds=profile.output.spoken_seconds,
        spoken_sentences=profile.output.spoken_sentences,
        read_only=registry.read_only(),
    )


def holding_lines(profile: Profile, language: str, registry: ToolRegistry) -> HoldingLines | None:
    """Return the turn's holding lines: the profile's, in the turn's language; None: none."""
    if not profile.holding.active:
        return None
    return HoldingLines(
        phrases=profile.holding,
        languages=language_chain(language, profile.language),
        hints=MappingProxyType(registry.holding_hints()),
    )


def _answer(job: TurnJob, record: TurnRecord, line: str) -> None:
    """Answer the turn with a host line alone, no model asked: say it and keep it as said."""
    record.messages.append(AssistantMessage(content=line))
    _say(job.sink, line, job.sink.shown)


def _say(sink: TurnSink, text: str, shown: str) -> None:
    """Put a host line into the turn's items (text and one spoken sentence)."""
    line = f"\n{text}" if shown and not shown.endswith("\n") else text
    sink.put(TextDelta(text=line))
    sink.put(SentenceOutput(display_text=line, tts_text=speakable(text)))
