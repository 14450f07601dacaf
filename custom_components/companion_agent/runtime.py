"""The runtime state of a loaded entry, and how it is built from the entry's settings."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from homeassistant.config_entries import ConfigEntry, ConfigEntryState, ConfigSubentry
from homeassistant.const import CONF_API_KEY, Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.httpx_client import get_async_client

from .agent.health import ServerHealth
from .const import (
    CONF_BASE_URL,
    CONF_FIRST_TOKEN_TIMEOUT,
    CONF_MODEL,
    DEFAULT_FIRST_TOKEN_TIMEOUT,
    DOMAIN,
    LOGGER,
    STORAGE_FOLDER,
)
from .engine.audit.log import AuditLog
from .engine.errors import CorruptionReporter
from .engine.llm import ChatModel, LLMSettings, OpenAIChatModel
from .engine.memory.companion import CompanionMemory
from .engine.plugins import HostServices, Library, LoadProblem, builtin_roots
from .engine.speech.head_start import SpeechHeadStarts
from .engine.turn.history import ConversationStore
from .engine.turn.runner import TurnRunner
from .proactive.follow_ups import FollowUps
from .voice.playback import PlaybackWatcher

FLUSH_GRACE = 10.0


@dataclass(slots=True, kw_only=True)
class CompanionRuntime:
    """What a loaded entry shares with its platforms."""

    model: OpenAIChatModel
    library: Library
    host: HostServices
    data_dir: Path
    runner: TurnRunner
    audit: AuditLog
    health: ServerHealth
    playback: PlaybackWatcher
    models: dict[str, ChatModel] = field(default_factory=dict)
    conversations: dict[str, ConversationStore] = field(default_factory=dict)
    persona_problems: dict[str, tuple[LoadProblem, ...]] = field(default_factory=dict)
    on_bad_history: CorruptionReporter | None = None
    follow_ups: FollowUps = field(default_factory=FollowUps)
    memory: CompanionMemory | None = None
    speech_starts: SpeechHeadStarts = field(default_factory=SpeechHeadStarts)
    platforms: tuple[Platform, ...] = ()
    """The platforms set up for the entry (the satellites' only when it has satellites)."""

    @property
    def problems(self) -> list[LoadProblem]:
        """Return every plugin and profile problem: the library's and each persona's."""
        active = [p for problems in self.persona_problems.values() for p in problems]
        return [*self.library.problems, *active]

    async def flush(self, grace: float = FLUSH_GRACE) -> None:
        """Write what is still in memory (turns, audit records), waiting ``grace`` s at most."""
        try:
            async with asyncio.timeout(grace):
                await asyncio.gather(*(store.flush() for store in self.conversations.values()))
        except TimeoutError:
            LOGGER.warning("Conversations not written within %.0f s; going on", grace)
        await self.audit.flush(grace)

    def conversation_store(self, persona_id: str) -> ConversationStore:
        """Return the conversation history of one persona."""
        if persona_id not in self.conversations:
            folder = self.data_dir / "conversations" / persona_id
            self.conversations[persona_id] = ConversationStore(
                folder, on_corrupt=self.on_bad_history
            )
        return self.conversations[persona_id]

    async def prune(self, retention: float) -> int:
        """Delete every persona's conversations idle longer than ``retention`` seconds."""
        folder = self.data_dir / "conversations"
        personas = await asyncio.to_thread(
            lambda: [p.name for p in folder.iterdir() if p.is_dir()] if folder.is_dir() else []
        )
        removed = 0
        for persona_id in personas:
            removed += await self.conversation_store(persona_id).prune(retention)
        if self.memory is not None:
            removed += await self.memory.prune(retention)  # the rolling windows too
        return removed

    def model_named(self, name: str | None) -> ChatModel:
        """Return the entry's model, or the same server with another model a profile names.

        Either way the server check hears how each of its rounds ended.
        """
        name = name or self.model.settings.model
        if name not in self.models:
            model = self.model
            if name != model.settings.model:
                model = OpenAIChatModel(
                    replace(model.settings, model=name), http_client=self.host.http
                )
            self.models[name] = self.health.watch(model)
        return self.models[name]


type CompanionConfigEntry = ConfigEntry[CompanionRuntime]


def build_model(
    hass: HomeAssistant, data: Mapping[str, Any], options: Mapping[str, Any] | None = None
) -> OpenAIChatModel:
    """Create the model adapter for an entry's connection settings and options."""
    first_token = (options or {}).get(CONF_FIRST_TOKEN_TIMEOUT, DEFAULT_FIRST_TOKEN_TIMEOUT)
    settings = LLMSettings(
        base_url=data[CONF_BASE_URL],
        model=data[CONF_MODEL],
        api_key=data.get(CONF_API_KEY) or None,
        first_token_timeout=float(first_token),
    )
    return OpenAIChatModel(settings, http_client=get_async_client(hass))


def add_per_subentry(
    entry: CompanionConfigEntry,
    kind: str,
    make: Callable[[CompanionConfigEntry, ConfigSubentry], Entity],
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one entity per subentry of ``kind``, each under its own subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == kind:
            async_add_entities([make(entry, subentry)], config_subentry_id=subentry.subentry_id)


def library_roots(hass: HomeAssistant) -> tuple[Path, ...]:
    """Return where plugins and profiles come from: built-in first, the user's folder last."""
    return (*builtin_roots(), Path(hass.config.path(STORAGE_FOLDER)))


def loaded_entries(hass: HomeAssistant) -> list[CompanionConfigEntry]:
    """Return the loaded entries; raise the translated error a service shows when none is."""
    entries: list[CompanionConfigEntry] = [
        entry
        for entry in hass.config_entries.async_entries(DOMAIN)
        if entry.state is ConfigEntryState.LOADED
    ]
    if not entries:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="not_loaded")
    return entries
