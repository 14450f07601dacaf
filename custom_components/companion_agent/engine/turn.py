"""One companion turn: hooks, prompt, the tool loop, storage and after-turn work, in order.

The host (HA glue, a CLI) supplies what only it knows — its own instructions, its own tools,
where the conversation is stored — and gets the turn's items back as a stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass

from .core import AgentCore
from .errors import ConfirmationRefusedError
from .events import (
    OutputItem,
    SentenceOutput,
    ThinkingDelta,
    ToolCallEvent,
    TurnItem,
    TurnResult,
)
from .llm import ChatModel
from .pipeline import PipelineConfig, build_pipeline
from .plugins import PluginSet, Profile, TurnContext
from .prompt import ContextSnippet, PromptBuilder, UserPromptBlock
from .storage import ConversationStorage
from .tools.contract import ToolContext, parse_arguments
from .tools.guard import GuardedExecutor
from .tools.kit import GuardKit
from .tools.notices import ConfirmationResult
from .tools.redact import token_ref
from .tools.registry import Tool, ToolRegistry
from .tools.targets import StateProbe, TargetResolver

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    """A snapshot of one persona: a running turn keeps the one it started with."""

    profile: Profile
    plugins: PluginSet
    model: ChatModel


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """What the host knows about one utterance."""

    text: str
    context: ToolContext
    storage: ConversationStorage
    device_id: str | None = None
    host_instructions: str = ""
    host_tools: Sequence[Tool] = ()
    host_targets: TargetResolver | None = None
    host_state: StateProbe | None = None
    host_preread: Callable[[], Coroutine[object, object, Sequence[ContextSnippet]]] | None = None


def pipeline_config(profile: Profile) -> PipelineConfig:
    """Return the output pipeline settings for a profile: its tags, voice-first cuts."""
    return PipelineConfig(
        action_tags=frozenset(profile.output.actions),
        faster_first_response=True,
        show_thinking=True,
    )


class TurnRunner:
    """Run turns for personas, every tool call behind the host's guard."""

    def __init__(self, guard: GuardKit | None = None, *, remembered: int = 64) -> None:
        """Use ``guard`` (a permissive default without entities) for every turn."""
        self.guard = GuardKit() if guard is None else guard
        self._executors: OrderedDict[str, GuardedExecutor] = OrderedDict()
        self._remembered = remembered

    def speak(self, persona: Persona, request: TurnRequest) -> AsyncIterator[OutputItem]:
        """Run a turn through the output pipeline and the persona's transformer plugins."""
        pipeline = build_pipeline(pipeline_config(persona.profile))
        return persona.plugins.transform(_output_items(pipeline(self.run(persona, request))))

    def executor_for(self, persona: Persona, request: TurnRequest) -> GuardedExecutor:
        """Return the guarded tools of one turn: the persona's plugins, then the host's."""
        registry = ToolRegistry([*persona.plugins.tools, *request.host_tools])
        executor = self.guard.executor(
            registry,
            persona.profile.policy,
            resolver=request.host_targets,
            state=request.host_state,
        )
        conversation_id = request.context.conversation_id
        self._executors.pop(conversation_id, None)
        self._executors[conversation_id] = executor
        while len(self._executors) > self._remembered:
            self._executors.popitem(last=False)
        return executor

    async def resolve(
        self, token_id: str, *, approve: bool, user_id: str | None
    ) -> ConfirmationResult:
        """Approve or deny a held call from outside a conversation (a dashboard, a phone)."""
        token = self.guard.book.peek(token_id)
        conversation_id = token.conversation_id if token is not None else ""
        executor = self._executors.get(conversation_id)
        if executor is None and token is None and self._executors:
            executor = next(reversed(self._executors.values()))  # audits the refusal
        if executor is None:
            raise ConfirmationRefusedError(
                "no such pending action", reason="unknown", token_ref=token_ref(token_id)
            )
        return await executor.confirmations.resolve(
            token_id, approve=approve, user_id=user_id, conversation_id=conversation_id
        )

    async def run(self, persona: Persona, request: TurnRequest) -> AsyncIterator[TurnItem]:
        """Yield the turn's text and events; store the exchange and run after-turn hooks."""
        profile, hooks, ctx = persona.profile, persona.plugins.hooks, request.context
        async with persona.plugins.lease():
            executor = self.executor_for(persona, request)
            desk = executor.confirmations
            reply = await desk.answer(
                request.text,
                language=ctx.language,
                user_id=ctx.user_id,
                conversation_id=ctx.conversation_id,
                trace_id=ctx.trace_id,
            )
            for confirmed in reply.results if reply is not None else ():
                yield _confirmed_event(confirmed)
            history = await request.storage.load()
            turn = TurnContext(
                conversation_id=ctx.conversation_id,
                profile_id=profile.id,
                language=ctx.language,
                user_id=ctx.user_id,
                device_id=request.device_id,
                first_turn=not history,
            )
            hooks.start_preread(turn)
            briefing = _start_briefing(request) if turn.first_turn else None
            snippets = await hooks.before_turn(request.text, turn)
            if briefing is not None:
                snippets = (*await _finish_briefing(briefing, profile.hook_timeout), *snippets)
            notices = tuple(
                ContextSnippet(source="confirmations", text=notice.content)
                for notice in desk.take_notices(ctx.conversation_id)
            )
            block = UserPromptBlock(text=request.text, context=(*notices, *snippets))
            builder = PromptBuilder(profile, extra_instructions=request.host_instructions)
            messages = builder.build(history, block)
            core = AgentCore(persona.model, executor, max_rounds=profile.max_rounds)
            result: TurnResult | None = None
            async for item in core.run_turn(messages, ctx):
                if isinstance(item, TurnResult):
                    result = item
                yield item
            answer = result.text if result is not None else ""
            if result is not None:
                self.guard.counters.count_tokens(
                    conversation_id=ctx.conversation_id, user_id=ctx.user_id, usage=result.usage
                )
            await self._store(request, answer)
            hooks.after_turn(request.text, answer, turn)

    @staticmethod
    async def _store(request: TurnRequest, answer: str) -> None:
        """Add the exchange to the conversation (written to disk later); never raise."""
        try:
            await request.storage.append_turn(request.text, answer)
        except Exception:
            LOGGER.warning(
                "Could not store the turn of %s", request.context.conversation_id, exc_info=True
            )


async def _output_items(items: AsyncIterator[object]) -> AsyncIterator[OutputItem]:
    """Narrow the pipeline's stream to the output item types."""
    async for item in items:
        match item:
            case SentenceOutput() | ToolCallEvent() | ThinkingDelta() | TurnResult():
                yield item
            case _:
                LOGGER.debug("Dropped an unknown output item %s", type(item).__name__)


def _confirmed_event(result: ConfirmationResult) -> ToolCallEvent:
    """Report a held call the person just approved (and its outcome) or declined."""
    token = result.token
    done = result.status == "executed" and result.outcome.kind == "success"
    return ToolCallEvent(
        tool_id=token.call_id,
        tool_name=token.tool_id,
        args=parse_arguments(token.arguments) or {},
        status="completed" if done else "error",
        result=result.outcome.content,
    )


def _start_briefing(request: TurnRequest) -> asyncio.Task[Sequence[ContextSnippet]] | None:
    """Start the host's first-turn pre-read (who is speaking, today's plans) in the background."""
    if request.host_preread is None:
        return None
    return asyncio.create_task(request.host_preread())


async def _finish_briefing(
    task: asyncio.Task[Sequence[ContextSnippet]], seconds: float
) -> Sequence[ContextSnippet]:
    """Return the pre-read if it is ready within ``seconds``; else go on without it."""
    try:
        async with asyncio.timeout(seconds):
            return await task
    except TimeoutError:
        LOGGER.warning("The host pre-read was cut at its timeout")
    except Exception:
        LOGGER.warning("The host pre-read failed", exc_info=True)
    return ()
