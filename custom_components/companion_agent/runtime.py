"""The runtime of a loaded entry (its engine, watchers and speaking turns), and its helpers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from homeassistant.config_entries import ConfigEntry, ConfigEntryState, ConfigSubentry
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.httpx_client import get_async_client

from .agent.health import ServerHealth
from .agent.last_good_rules import LastGoodRules
from .const import (
    CONF_BASE_URL,
    CONF_FIRST_TOKEN_TIMEOUT,
    CONF_MODEL,
    DEFAULT_FIRST_TOKEN_TIMEOUT,
    DOMAIN,
    STORAGE_FOLDER,
    SUBENTRY_CONVERSATION,
)
from .engine.engine import Engine
from .engine.llm import LLMSettings, OpenAIChatModel
from .engine.plugins import builtin_roots
from .engine.turn.request import Initiator, Persona, TurnRequest
from .voice.playback import PlaybackWatcher
from .voice.speaking import SpeakingTurns
from .voice.voiceprints import HouseholdVoices


@dataclass(frozen=True, slots=True, kw_only=True)
class CompanionRuntime:
    """What a loaded entry shares with its platforms: its engine, the HA-side watchers, the
    last good rules of its personas' profiles, its household's voices, and its satellites'
    speaking turns."""

    engine: Engine
    health: ServerHealth
    playback: PlaybackWatcher
    rules: LastGoodRules
    voices: HouseholdVoices
    speaking: SpeakingTurns = field(default_factory=SpeakingTurns)


type CompanionConfigEntry = ConfigEntry[CompanionRuntime]


def llm_settings(data: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> LLMSettings:
    """Return the model settings of an entry's connection settings and options."""
    first_token = (options or {}).get(CONF_FIRST_TOKEN_TIMEOUT, DEFAULT_FIRST_TOKEN_TIMEOUT)
    return LLMSettings(
        base_url=data[CONF_BASE_URL],
        model=data[CONF_MODEL],
        api_key=data.get(CONF_API_KEY) or None,
        first_token_timeout=float(first_token),
    )


def build_model(hass: HomeAssistant, data: Mapping[str, Any]) -> OpenAIChatModel:
    """Create the model adapter for an entry's connection settings (to check them)."""
    return OpenAIChatModel(llm_settings(data), http_client=get_async_client(hass))


def subentry_device(subentry: ConfigSubentry, model: str) -> DeviceInfo:
    """Return the service device a sub-entry's entity belongs to, named as the sub-entry."""
    return DeviceInfo(
        identifiers={(DOMAIN, subentry.subentry_id)},
        name=subentry.title,
        manufacturer="Companion Agent",
        model=model,
        entry_type=DeviceEntryType.SERVICE,
    )


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


def persona_ids(entry: ConfigEntry[Any]) -> list[str]:
    """Return the entry's persona (conversation sub-entry) ids."""
    return [
        sub.subentry_id
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    ]


def library_roots(hass: HomeAssistant) -> tuple[Path, ...]:
    """Return where plugins and profiles come from: built-in first, the user's folder last."""
    return (*builtin_roots(), Path(hass.config.path(STORAGE_FOLDER)))


def loaded(hass: HomeAssistant) -> list[CompanionConfigEntry]:
    """Return the loaded entries, maybe none."""
    return [
        entry
        for entry in hass.config_entries.async_entries(DOMAIN)
        if entry.state is ConfigEntryState.LOADED
    ]


def loaded_entries(hass: HomeAssistant) -> list[CompanionConfigEntry]:
    """Return the loaded entries; raise the translated error a service shows when none is."""
    entries = loaded(hass)
    if not entries:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="not_loaded")
    return entries


class Speaker(Protocol):
    """A persona's conversation entity: its entry, sub-entry and current persona."""

    entry: CompanionConfigEntry
    subentry: ConfigSubentry
    entity_id: str

    @property
    def persona(self) -> Persona:
        """Return the persona snapshot new turns use."""
        ...

    async def async_turn_request(
        self,
        text: str,
        *,
        conversation_id: str,
        language: str,
        device_id: str | None,
        initiator: Initiator,
    ) -> TurnRequest:
        """Return the request for a turn this persona starts itself, acting on nothing."""
        ...
