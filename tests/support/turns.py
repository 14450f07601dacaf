"""Whole engine turns for tests: a persona from parts, a request, and a run to the end.

``Conversations.request`` returns an ``Ask``: a turn's request before its persona is
chosen, with where it is stored (its conversation in a real exchange store, in a person's
recent window too when ``owner`` is given, and the window a test may set); ``start`` and
``run`` hand it to a ``TurnRunner`` as the persona's.
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
from custom_components.companion_agent.engine.turn.exchanges import ConversationView, ExchangeStore
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.engine.turn.history import (
    ConversationHistory,
    HistoryView,
)
from custom_components.companion_agent.engine.turn.loop import SpokenLines
from custom_components.companion_agent.engine.turn.request import Initiator, Persona, TurnRequest
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from custom_components.companion_agent.engine.turn.stored import StoredTurn
from tests.support.exchanges import open_exchanges
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
    window: HistoryView | None = None

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
    """Real exchanges of one persona (``p1``) in an exchange store under a temporary folder."""

    folder: Path
    exchanges: ExchangeStore | None = None
    """The store to use (memory's, when a test has memory); else one in ``folder``."""
    persona_id: str = "p1"
    store: ExchangeStore = field(init=False)

    def __post_init__(self) -> None:
        """Open the store (its file in ``folder``) unless one was given."""
        self.store = self.exchanges or open_exchanges(self.folder / "exchanges.db")

    def history(self, conversation_id: str = "conv-1") -> ConversationView:
        """Return a conversation's view (its own turns, not in a window)."""
        return self.store.conversation(self.persona_id, conversation_id)

    async def turns(self, conversation_id: str = "conv-1") -> list[StoredTurn]:
        """Return a conversation's stored turns, oldest first."""
        return await self.store.conversation(self.persona_id, conversation_id).turns()

    def request(
        self,
        text: str,
        *,
        conversation_id: str = "conv-1",
        user_id: str | None = "alice",
        tools: Sequence[Tool] = (),
        hooks: Sequence[Hook] = (),
        trace_id: str = "trace",
        owner: str | None = None,
    ) -> Ask:
        """Return a request in one conversation; with ``owner``, in their window too."""
        return Ask(
            text=text,
            context=ToolContext(
                conversation_id=conversation_id, user_id=user_id, trace_id=trace_id
            ),
            history=self.store.conversation(
                self.persona_id, conversation_id, owner=owner, windowed=owner is not None
            ),
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
