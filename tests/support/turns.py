"""Whole engine turns for tests: a persona from parts, a request, and a run to the end.

``Conversations.request`` returns an ``Ask``: a turn's request before its persona is
chosen, with where it is stored (its conversation, and a recent window if a test sets one);
``start`` and ``run`` hand it to a ``TurnRunner`` as the persona's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from custom_components.companion_agent.engine.events import (
    OutputItem,
    SentenceOutput,
    TextDelta,
    TurnResult,
)
from custom_components.companion_agent.engine.llm import ChatModel
from custom_components.companion_agent.engine.plugins import (
    Hook,
    HookManager,
    PluginSet,
    Profile,
)
from custom_components.companion_agent.engine.tools.contract import ToolContext
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.engine.turn.history import (
    ConversationHistory,
    ConversationStore,
)
from custom_components.companion_agent.engine.turn.loop import SpokenLines
from custom_components.companion_agent.engine.turn.request import Initiator, Persona, TurnRequest
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.lines import ENGLISH

PROFILE = Profile(id="test", name="Test", source=Path("<test>"), persona="You are a test.")


def persona(model: ChatModel, *, hooks: Sequence[Hook] = (), profile: Profile = PROFILE) -> Persona:
    """Return a persona with no plugins but the given hooks."""
    return Persona(profile=profile, plugins=PluginSet((), HookManager(hooks)), model=model)


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """A test turn's request without its persona, and the histories it is stored in."""

    text: str
    context: ToolContext
    history: ConversationHistory
    lines: SpokenLines = ENGLISH
    host_tools: Sequence[Tool] = ()
    host_hooks: Sequence[Hook] = ()
    device_id: str | None = None
    initiator: Initiator = "person"
    window: ConversationHistory | None = None

    def turn_request(self, who: Persona) -> TurnRequest:
        """Return the request as ``who``'s."""
        return TurnRequest(
            persona=who,
            text=self.text,
            context=self.context,
            lines=self.lines,
            host_tools=self.host_tools,
            host_hooks=self.host_hooks,
            device_id=self.device_id,
            initiator=self.initiator,
        )


@dataclass
class Conversations:
    """Real conversation files for one persona under a temporary folder."""

    folder: Path
    store: ConversationStore = field(init=False)

    def __post_init__(self) -> None:
        """Open the store."""
        self.store = ConversationStore(self.folder)

    def request(
        self,
        text: str,
        *,
        conversation_id: str = "conv-1",
        user_id: str | None = "alice",
        tools: Sequence[Tool] = (),
        hooks: Sequence[Hook] = (),
        trace_id: str = "trace",
    ) -> Ask:
        """Return a request in one conversation, stored in this folder."""
        return Ask(
            text=text,
            context=ToolContext(
                conversation_id=conversation_id, user_id=user_id, trace_id=trace_id
            ),
            history=self.store.get(conversation_id),
            host_tools=tools,
            host_hooks=hooks,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """What a turn yielded and how it ended."""

    items: tuple[OutputItem, ...]
    result: TurnResult

    @property
    def text(self) -> str:
        """Return the display text the host received."""
        return "".join(item.text for item in self.items if isinstance(item, TextDelta))

    @property
    def sentences(self) -> list[SentenceOutput]:
        """Return the sentences the host received."""
        return [item for item in self.items if isinstance(item, SentenceOutput)]


def start(runner: TurnRunner, who: Persona, ask: Ask) -> Turn:
    """Start ``ask`` as ``who``'s turn and return its handle."""
    return runner.start(ask.turn_request(who), ask.history, ask.window)


async def run(runner: TurnRunner, who: Persona, ask: Ask) -> Finished:
    """Start a turn, take every item, and wait for its result."""
    return await finish(start(runner, who, ask))


async def finish(turn: Turn) -> Finished:
    """Take every item of a started turn and wait for its result."""
    items = tuple([item async for item in turn.items()])
    return Finished(items=items, result=await turn.result)
