"""Our config entry for tests, with any of its sub-entry kinds, and its entities once loaded.

One builder per sub-entry kind (``const.SUBENTRY_*``): a persona (conversation), a voice
(a Wyoming server or embedded Piper), a speech-to-text model, a Wyoming satellite. Each has
the defaults most tests want and takes what a test changes; ``companion_entry`` puts them
in one entry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Protocol

from homeassistant.components.stt.const import DATA_COMPONENT as STT_COMPONENT
from homeassistant.components.tts.const import DATA_COMPONENT as TTS_COMPONENT
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import CONF_API_KEY, CONF_HOST, CONF_LLM_HASS_API, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_BASE_URL,
    CONF_ENGINE,
    CONF_LANGUAGES,
    CONF_MEMORY_ENVIRONMENT,
    CONF_MODEL,
    CONF_PROFILE,
    CONF_SPEAKER,
    CONF_VOICE,
    DOMAIN,
    ENGINE_EMBEDDED,
    SUBENTRY_CONVERSATION,
    SUBENTRY_SATELLITE,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from custom_components.companion_agent.stt import CompanionSttEntity
from custom_components.companion_agent.tts import CompanionTtsEntity

MODEL = "test-model"
VOICE = "en_US-joe-medium"
"""The voice the Piper peer in .peers/piper speaks."""


class SetupCompanion(Protocol):
    """Set up our entry against the local model server; return it once loaded."""

    def __call__(
        self, *subentries: ConfigSubentryData, options: Mapping[str, object] | None = None
    ) -> Awaitable[MockConfigEntry]:
        """Set up an entry with ``subentries`` (one default persona if none) and ``options``."""


class SetupPersonas(Protocol):
    """Set up our entry with one persona per ``title: profile``; return it and the agents."""

    def __call__(
        self, personas: Mapping[str, str], *, options: Mapping[str, object] | None = None
    ) -> Awaitable[tuple[MockConfigEntry, dict[str, str]]]:
        """Return the loaded entry (with ``options``) and each persona's agent id by title."""


def persona(
    title: str = "Companion", profile: str = "default", *, llm_apis: Sequence[str] = ()
) -> ConfigSubentryData:
    """Return a persona sub-entry: a conversation agent on ``profile``, using ``llm_apis``."""
    data: dict[str, object] = {CONF_PROFILE: profile}
    if llm_apis:
        data[CONF_LLM_HASS_API] = list(llm_apis)
    return _subentry(SUBENTRY_CONVERSATION, title, data)


def wyoming_voice(
    host: str,
    port: int,
    voice: str = VOICE,
    *,
    speaker: str | None = None,
    languages: Sequence[str] = ("en_US",),
) -> ConfigSubentryData:
    """Return a voice sub-entry spoken by the Wyoming TTS server at ``host``:``port``."""
    data: dict[str, object] = {
        CONF_HOST: host,
        CONF_PORT: port,
        CONF_VOICE: voice,
        CONF_LANGUAGES: list(languages),
    }
    if speaker is not None:
        data[CONF_SPEAKER] = speaker
    title = voice if speaker is None else f"{voice} ({speaker})"
    return _subentry(SUBENTRY_TTS, title, data)


def embedded_voice(voice: str, *, languages: Sequence[str] = ("en_US",)) -> ConfigSubentryData:
    """Return a voice sub-entry spoken by embedded Piper from the voices folder."""
    data = {CONF_ENGINE: ENGINE_EMBEDDED, CONF_VOICE: voice, CONF_LANGUAGES: list(languages)}
    return _subentry(SUBENTRY_TTS, f"{voice} (embedded)", data)


def speech_to_text(
    host: str,
    port: int,
    model: str = "tiny",
    *,
    languages: Sequence[str] = ("en", "zh"),
    title: str | None = None,
) -> ConfigSubentryData:
    """Return a speech-to-text sub-entry: ``model`` on the Wyoming ASR server there."""
    data = {CONF_HOST: host, CONF_PORT: port, CONF_MODEL: model, CONF_LANGUAGES: list(languages)}
    return _subentry(SUBENTRY_STT, title or model, data)


def satellite(host: str, port: int, title: str = "Kitchen satellite") -> ConfigSubentryData:
    """Return a satellite sub-entry: the Wyoming satellite at ``host``:``port``."""
    return _subentry(SUBENTRY_SATELLITE, title, {CONF_HOST: host, CONF_PORT: port})


def companion_entry(
    base_url: str,
    *subentries: ConfigSubentryData,
    api_key: str = "",
    options: Mapping[str, object] | None = None,
) -> MockConfigEntry:
    """Return our entry for the model server at ``base_url`` with these sub-entries.

    Its memories are the test environment's, never production's.
    """
    return MockConfigEntry(
        domain=DOMAIN,
        title=MODEL,
        data={
            CONF_BASE_URL: base_url,
            CONF_API_KEY: api_key,
            CONF_MODEL: MODEL,
            CONF_MEMORY_ENVIRONMENT: "test",
        },
        options=dict(options or {}),
        subentries_data=list(subentries),
    )


async def async_load(
    hass: HomeAssistant, entry: MockConfigEntry, *, wait_background_tasks: bool = False
) -> MockConfigEntry:
    """Add ``entry`` to HA, set it up (it must load) and let its platforms settle."""
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=wait_background_tasks)
    return entry


def entity_ids(hass: HomeAssistant, entry: MockConfigEntry, domain: str) -> list[str]:
    """Return the entry's entities of ``domain`` (``conversation``, ``tts``, ...)."""
    return [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == domain
    ]


def entity_id(hass: HomeAssistant, entry: MockConfigEntry, domain: str) -> str:
    """Return the entry's one entity of ``domain``."""
    (only,) = entity_ids(hass, entry, domain)
    return only


def tts_entity(hass: HomeAssistant, entry: MockConfigEntry) -> CompanionTtsEntity:
    """Return the entry's one TTS entity object."""
    entity = hass.data[TTS_COMPONENT].get_entity(entity_id(hass, entry, "tts"))
    assert isinstance(entity, CompanionTtsEntity)
    return entity


def stt_entity(hass: HomeAssistant, entry: MockConfigEntry) -> CompanionSttEntity:
    """Return the entry's one STT entity object."""
    entity = hass.data[STT_COMPONENT].get_entity(entity_id(hass, entry, "stt"))
    assert isinstance(entity, CompanionSttEntity)
    return entity


def agents_by_title(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, str]:
    """Return the conversation entity id of each persona, by the sub-entry's title."""
    titles = {sub.subentry_id: sub.title for sub in entry.subentries.values()}
    return {
        titles[e.config_subentry_id]: e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == "conversation" and e.config_subentry_id is not None
    }


def _subentry(kind: str, title: str, data: Mapping[str, object]) -> ConfigSubentryData:
    """Return one sub-entry's stored form."""
    return ConfigSubentryData(data=dict(data), subentry_type=kind, title=title, unique_id=None)
