"""One companion turn: hooks, prompt, the tool loop, storage and after-turn work, in order.

The host (HA glue, a CLI) supplies what only it knows — its own instructions, its own tools,
where the conversation is stored — and gets the turn's items back as a stream.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from .core import AgentCore
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
from .prompt import PromptBuilder, UserPromptBlock
from .storage import ConversationStorage
from .tools.contract import ToolContext
from .tools.registry import Tool, ToolExecutor, ToolRegistry

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


def pipeline_config(profile: Profile) -> PipelineConfig:
    """Return the output pipeline settings for a profile: its tags, voice-first cuts."""
    return PipelineConfig(
        action_tags=frozenset(profile.output.actions),
        faster_first_response=True,
        show_thinking=True,
    )


class TurnRunner:
    """Run turns for personas."""

    def speak(self, persona: Persona, request: TurnRequest) -> AsyncIterator[OutputItem]:
        """Run a turn through the output pipeline and the persona's transformer plugins."""
        pipeline = build_pipeline(pipeline_config(persona.profile))
        return persona.plugins.transform(_output_items(pipeline(self.run(persona, request))))

    def tools_for(self, persona: Persona, request: TurnRequest) -> ToolExecutor:
        """Return the tools of one turn: the persona's plugins, then the host's."""
        return ToolRegistry([*persona.plugins.tools, *request.host_tools])

    async def run(self, persona: Persona, request: TurnRequest) -> AsyncIterator[TurnItem]:
        """Yield the turn's text and events; store the exchange and run after-turn hooks."""
        profile, hooks, ctx = persona.profile, persona.plugins.hooks, request.context
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
        snippets = await hooks.before_turn(request.text, turn)
        block = UserPromptBlock(text=request.text, context=snippets)
        builder = PromptBuilder(profile, extra_instructions=request.host_instructions)
        messages = builder.build(history, block)
        core = AgentCore(
            persona.model, self.tools_for(persona, request), max_rounds=profile.max_rounds
        )
        result: TurnResult | None = None
        async for item in core.run_turn(messages, ctx):
            if isinstance(item, TurnResult):
                result = item
            yield item
        answer = result.text if result is not None else ""
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
