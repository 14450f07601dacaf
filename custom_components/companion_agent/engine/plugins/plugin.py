"""The four plugin types, what the host gives a plugin, and what a turn tells a hook.

A plugin is a class deriving from one or more of ``HookPlugin``, ``ToolPlugin``,
``TriggerPlugin`` and ``TransformerPlugin`` (all derive from ``Plugin``). The loader builds
it as ``cls(context)``; the constructor must not do I/O (it runs on the event loop).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..events import OutputItem, TurnOutcome
from ..proactive.host import PresenceProbe, StateWatcher
from ..tools.registry import Tool
from .config import PluginConfig

if TYPE_CHECKING:
    import httpx  # the host's client: httpx2 under the same name on HA 2026.11 and later

type PluginType = Literal["tool", "hook", "trigger", "transformer"]
PLUGIN_TYPES: tuple[PluginType, ...] = ("tool", "hook", "trigger", "transformer")


def utc_now() -> datetime:
    """Return the current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginContext:
    """What the host hands a plugin: its settings, a data folder, time and HTTP.

    ``presence`` and ``states`` are there when the host can tell who is home and follow its
    entities' states (Home Assistant can); a plugin must cope with None. ``speakers`` is what
    the host's ids of devices that can speak look like (Home Assistant: satellites and
    media players); None: the host cannot tell, any id may be one.
    """

    plugin_id: str
    profile_id: str
    config: PluginConfig
    data_dir: Path
    time_zone: tzinfo
    http: httpx.AsyncClient
    language: str = "en"
    clock: Callable[[], datetime] = field(default=utc_now)
    presence: PresenceProbe | None = None
    states: StateWatcher | None = None
    speakers: re.Pattern[str] | None = None

    def now(self) -> datetime:
        """Return the current time in the host's time zone."""
        return self.clock().astimezone(self.time_zone)


@dataclass(frozen=True, slots=True, kw_only=True)
class HostServices:
    """The host's shared services, from which each plugin's ``PluginContext`` is made."""

    data_root: Path
    time_zone: tzinfo
    http: httpx.AsyncClient
    clock: Callable[[], datetime] = field(default=utc_now)
    presence: PresenceProbe | None = None
    states: StateWatcher | None = None
    speakers: re.Pattern[str] | None = None
    """What the host's ids of devices that can speak look like; None: any id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnContext:
    """Which conversation a hook call belongs to, whether it is its first turn, how it ended.

    ``outcome`` is set for ``on_after_turn`` and ``on_after_playback`` (``complete``,
    ``cut``, ``interrupted``, ``failed`` or ``timed_out``); None before the turn.
    """

    conversation_id: str
    profile_id: str
    language: str = "en"
    user_id: str | None = None
    device_id: str | None = None
    first_turn: bool = False
    outcome: TurnOutcome | None = None
    proactive: bool = False
    """The home began the turn: ``user_text`` is its instruction, not the person's words."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProactiveRequest:
    """A trigger asks the host to start a turn: ``prompt`` tells the model why to speak.

    ``targets`` names where to speak (the host's entity ids: satellites, media players);
    empty leaves the choice to the host's defaults.
    """

    source: str
    prompt: str
    conversation_id: str | None = None
    device_id: str | None = None
    targets: tuple[str, ...] = ()


type ProactiveEmitter = Callable[[ProactiveRequest], Awaitable[None]]


class Plugin:
    """Base of every plugin: holds its context; ``close`` releases what it holds."""

    def __init__(self, context: PluginContext) -> None:
        """Keep the context; do no I/O here."""
        self.context = context

    @property
    def plugin_id(self) -> str:
        """Return the id from plugin.toml."""
        return self.context.plugin_id

    async def close(self) -> None:
        """Release resources; called once when the plugin set is retired."""
        return


class HookPlugin(Plugin):
    """Lifecycle hooks around a turn; override any of them, the rest do nothing."""

    async def on_first_turn(self, ctx: TurnContext) -> str | None:
        """Return reference text read once at the start of a conversation, or None."""
        return None

    async def on_before_turn(self, user_text: str, ctx: TurnContext) -> str | None:
        """Return reference text for this turn's ``[memory context]``, or None."""
        return None

    async def on_after_turn(self, user_text: str, assistant_text: str, ctx: TurnContext) -> None:
        """Act on a finished turn, in the background (e.g. write memory)."""
        return

    async def on_after_playback(
        self, user_text: str, assistant_text: str, ctx: TurnContext
    ) -> None:
        """Act once the answer's audio has finished playing."""
        return


class Hook(Protocol):
    """What the hook manager calls: a hook plugin, or a hook the host provides itself."""

    @property
    def plugin_id(self) -> str:
        """Return the name its reference text is labelled with."""
        ...

    async def on_first_turn(self, ctx: TurnContext) -> str | None:
        """Return reference text read once at the start of a conversation, or None."""
        ...

    async def on_before_turn(self, user_text: str, ctx: TurnContext) -> str | None:
        """Return reference text for this turn's ``[memory context]``, or None."""
        ...

    async def on_after_turn(self, user_text: str, assistant_text: str, ctx: TurnContext) -> None:
        """Act on a finished turn, in the background."""
        ...

    async def on_after_playback(
        self, user_text: str, assistant_text: str, ctx: TurnContext
    ) -> None:
        """Act once the answer's audio has finished playing."""
        ...


class ToolPlugin(Plugin, ABC):
    """Adds tools the model may call."""

    @abstractmethod
    def tools(self) -> Sequence[Tool]:
        """Return this plugin's tools."""


class TriggerPlugin(Plugin, ABC):
    """Starts turns by itself: on a schedule, an event, a mood."""

    @abstractmethod
    async def start(self, emit: ProactiveEmitter) -> None:
        """Begin watching; call ``emit`` to ask for a turn. Return promptly."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop watching; no ``emit`` after this returns."""


class TransformerPlugin(Plugin, ABC):
    """An extra output-pipeline stage; unknown items must pass through unchanged."""

    @abstractmethod
    def transform(self, items: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Return the stage's output stream for ``items``."""


PLUGIN_BASES: dict[PluginType, type[Plugin]] = {
    "tool": ToolPlugin,
    "hook": HookPlugin,
    "trigger": TriggerPlugin,
    "transformer": TransformerPlugin,
}
