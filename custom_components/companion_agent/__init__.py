"""The Companion Agent integration: a voice companion for Home Assistant."""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from pathlib import Path
from types import MappingProxyType

from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import EVENT_HOMEASSISTANT_STOP, Platform
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers import entity_platform
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.helpers.httpx_client import get_async_client
from homeassistant.helpers.typing import ConfigType
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util

from .agent.confirmations import async_fire_confirmation
from .agent.entry_changes import EntryChanges
from .agent.guard_rules import DEFAULT_RULES
from .agent.health import ServerHealth
from .agent.last_good_rules import LastGoodRules
from .agent.personas import persona_setups
from .config_flow import entry_title
from .const import (
    CONF_ASLEEP_ENTITY,
    CONF_BASE_URL,
    CONF_CONFIRM_TTL,
    CONF_RETENTION_DAYS,
    CONF_TURNS_PER_MINUTE,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONFIRM_TTL,
    DEFAULT_RETENTION_DAYS,
    DEFAULT_TURNS_PER_MINUTE,
    DOMAIN,
    HELD_NOTICES_FILE,
    LOGGER,
    STORAGE_FOLDER,
    SUBENTRY_AI_TASK,
    SUBENTRY_SATELLITE,
)
from .engine.engine import Engine, EngineSettings, TurnLimits
from .engine.errors import CompanionError, LLMAuthError
from .engine.plugins import HostServices
from .engine.redaction import redact_url
from .frontend.resources import async_setup_card
from .memory.setup import async_memory_config, async_memory_started, async_remove_personas
from .proactive.home_state import HassPresence, HassStateWatcher
from .proactive.speak import SPEAKER_ENTITY
from .repairs import (
    async_clear_entry_issues,
    async_clear_persona_rules,
    async_report_bad_history,
    async_report_bad_memory_file,
    async_sync_load_problems,
)
from .runtime import (
    CompanionConfigEntry,
    CompanionRuntime,
    library_roots,
    llm_settings,
    persona_ids,
)
from .services import async_setup_services
from .voice.enrolment import async_forget_removed_users
from .voice.pipelines import async_watch_pipelines
from .voice.playback import PlaybackWatcher
from .voice.voiceprints import VOICEPRINTS_FILE, HouseholdVoices

PLATFORMS: tuple[Platform, ...] = (
    Platform.AI_TASK,
    Platform.CONVERSATION,
    Platform.SENSOR,
    Platform.STT,
    Platform.TODO,
    Platform.TTS,
)
SATELLITE_PLATFORMS = (Platform.ASSIST_SATELLITE, Platform.SELECT)
PRUNE_INTERVAL = timedelta(hours=24)
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Register the integration's services; serve the companion card."""
    async_setup_services(hass)
    await async_setup_card(hass)
    return True


async def async_migrate_entry(hass: HomeAssistant, entry: CompanionConfigEntry) -> bool:
    """Bring an older entry up to date: one made before AI tasks gets an AI task sub-entry."""
    if entry.version > 1:
        return False  # made by a newer version of the integration
    if entry.minor_version < 2:
        if not any(sub.subentry_type == SUBENTRY_AI_TASK for sub in entry.subentries.values()):
            hass.config_entries.async_add_subentry(
                entry,
                ConfigSubentry(
                    data=MappingProxyType({}),
                    subentry_type=SUBENTRY_AI_TASK,
                    title=DEFAULT_AI_TASK_NAME,
                    unique_id=None,
                ),
            )
        hass.config_entries.async_update_entry(entry, minor_version=2)
    return True


async def async_setup_entry(hass: HomeAssistant, entry: CompanionConfigEntry) -> bool:
    """Check the model server, load plugins and profiles, set up the agents.

    A server that does not answer does not stop the agents (they say they cannot reach their
    model); only a refused key does, so that re-authentication starts.
    """
    if (
        entry.title != (safe := entry_title(entry.data))
        and redact_url(entry.data[CONF_BASE_URL]) != entry.data[CONF_BASE_URL]
    ):
        hass.config_entries.async_update_entry(entry, title=safe)  # no secrets in titles
    health = ServerHealth(hass, entry, llm_settings(entry.data, entry.options))
    error = await health.async_check()
    health.async_observe(error, reauth=False)
    if isinstance(error, LLMAuthError):
        raise ConfigEntryAuthFailed(str(error)) from error
    entry.async_on_unload(health.async_stop)
    rules = LastGoodRules(hass, entry.entry_id)
    await rules.async_load(persona_ids(entry))
    engine = Engine(await _async_engine_settings(hass, entry, health))
    voices = HouseholdVoices(hass, entry.entry_id)
    await voices.async_load()
    entry.runtime_data = CompanionRuntime(
        engine=engine,
        health=health,
        playback=PlaybackWatcher(hass, engine.speech),
        rules=rules,
        voices=voices,
    )
    entry.async_on_unload(async_forget_removed_users(hass, voices))
    entry.async_on_unload(entry.runtime_data.playback.async_stop)
    async_memory_started(hass, entry, await engine.start())
    async_sync_load_problems(hass, engine.problems)
    retention = timedelta(days=entry.options.get(CONF_RETENTION_DAYS, DEFAULT_RETENTION_DAYS))

    async def _async_prune(_now: object = None) -> None:
        """Delete conversations nobody has spoken in for longer than the retention."""
        try:
            removed = await engine.prune(retention.total_seconds())
        except CompanionError as err:  # the file failed: the next interval tries again
            LOGGER.warning("Could not prune idle conversations: %s", err)
            return
        if removed:
            LOGGER.debug("Pruned %d idle conversations", removed)

    entry.async_create_background_task(hass, _async_prune(), f"{DOMAIN} prune conversations")
    entry.async_on_unload(async_track_time_interval(hass, _async_prune, PRUNE_INTERVAL))

    async def _async_flush_on_stop(_event: Event) -> None:
        """Write what is still in memory before Home Assistant stops."""
        await engine.stop()

    entry.async_on_unload(
        hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, _async_flush_on_stop)
    )
    await hass.config_entries.async_forward_entry_setups(entry, await _async_platforms(hass, entry))
    async_watch_pipelines(hass, entry)
    personas = frozenset(persona_ids(entry))
    changes = EntryChanges(entry)
    entry.async_on_unload(
        entry.add_update_listener(partial(_async_update_listener, personas, changes))
    )
    LOGGER.debug("Companion Agent set up for %s", redact_url(entry.data[CONF_BASE_URL]))
    return True


async def async_unload_entry(hass: HomeAssistant, entry: CompanionConfigEntry) -> bool:
    """Unload the agents and let stored turns reach the disk.

    The entry's issues stay over a reload; disabling the entry removes them.
    """
    unloaded = await hass.config_entries.async_unload_platforms(
        entry, _loaded_platforms(hass, entry)
    )
    if unloaded:
        if entry.disabled_by is not None:
            async_clear_entry_issues(hass, entry.entry_id)
        await entry.runtime_data.engine.close()
    return unloaded


async def async_remove_entry(hass: HomeAssistant, entry: CompanionConfigEntry) -> None:
    """Remove what the entry's personas remembered, its issues, and the integration's last.

    Removing the entry is explicit: every persona's memories (in every backend), exchanges
    and queued writes go, the entry's outbox file, its voiceprints and its personas' last
    good rules; its held
    calls ended (out loud) as it unloaded, and what their people had not heard yet goes with it.
    """
    async_clear_entry_issues(hass, entry.entry_id)
    await LastGoodRules(hass, entry.entry_id).async_remove()
    if not any(e.entry_id != entry.entry_id for e in hass.config_entries.async_entries(DOMAIN)):
        async_sync_load_problems(hass, [])
    engine = Engine(await _async_engine_settings(hass, entry, None))
    await async_remove_personas(hass, entry, engine, persona_ids(entry), started=False)
    await hass.async_add_executor_job(partial(_held_notices(hass, entry).unlink, missing_ok=True))
    voiceprints = Path(hass.config.path(STORAGE_FOLDER, f"{entry.entry_id}.{VOICEPRINTS_FILE}"))
    await hass.async_add_executor_job(partial(voiceprints.unlink, missing_ok=True))


def _held_notices(hass: HomeAssistant, entry: CompanionConfigEntry) -> Path:
    """Return where the entry's engine leaves what its held calls' people have not heard."""
    return Path(hass.config.path(STORAGE_FOLDER, f"{entry.entry_id}.{HELD_NOTICES_FILE}"))


async def _async_platforms(
    hass: HomeAssistant, entry: CompanionConfigEntry
) -> tuple[Platform, ...]:
    """Return the entry's platforms: the satellites' too when it has a satellite subentry.

    Their selects are Assist's and need it set up first (``assist_satellite`` sets up
    ``assist_pipeline``); an entry without satellites never loads either.
    """
    platforms = PLATFORMS
    if any(s.subentry_type == SUBENTRY_SATELLITE for s in entry.subentries.values()):
        if not await async_setup_component(hass, "assist_satellite", {}):
            raise ConfigEntryNotReady("Assist satellites could not be set up")
        platforms = (*PLATFORMS, *SATELLITE_PLATFORMS)
    return platforms


@callback
def _loaded_platforms(hass: HomeAssistant, entry: CompanionConfigEntry) -> list[Platform]:
    """Return the platforms set up for ``entry``: the satellites' only if they were.

    The entry's satellite sub-entries may have changed since (a reload follows), so what
    was set up is read from the entity platforms themselves.
    """
    satellites = {
        platform.domain
        for platform in entity_platform.async_get_platforms(hass, DOMAIN)
        if platform.config_entry is entry
    }
    return [*PLATFORMS, *(p for p in SATELLITE_PLATFORMS if p in satellites)]


async def _async_update_listener(
    personas: frozenset[str],
    changes: EntryChanges,
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
) -> None:
    """Forget the personas (of those set up) whose sub-entries were removed; follow the rest.

    A removed persona's memories, kept rules and rules issue go. A persona's own change
    reaches its new turns; any other change reloads the entry.
    """
    if removed := personas - set(persona_ids(entry)):
        engine = entry.runtime_data.engine
        await async_remove_personas(hass, entry, engine, removed, started=True)
        await entry.runtime_data.rules.async_forget(removed)
        async_clear_persona_rules(hass, removed)
    await changes.async_updated(hass, entry)


async def _async_engine_settings(
    hass: HomeAssistant, entry: CompanionConfigEntry, health: ServerHealth | None
) -> EngineSettings:
    """Return the engine settings of an entry (its memory's requirements installed)."""
    data_dir = Path(hass.config.path(STORAGE_FOLDER))
    http = get_async_client(hass)
    return EngineSettings(
        model=llm_settings(entry.data, entry.options),
        http=http,
        data_dir=data_dir,
        library_roots=library_roots(hass),
        host=HostServices(
            data_root=data_dir / "data",
            time_zone=dt_util.get_default_time_zone(),
            http=http,
            presence=HassPresence(hass, entry.options.get(CONF_ASLEEP_ENTITY)),
            states=HassStateWatcher(hass),
            speakers=SPEAKER_ENTITY,
        ),
        rules=DEFAULT_RULES,
        confirm_ttl=float(entry.options.get(CONF_CONFIRM_TTL, DEFAULT_CONFIRM_TTL)),
        limits=TurnLimits(
            turns_per_minute=int(entry.options.get(CONF_TURNS_PER_MINUTE, DEFAULT_TURNS_PER_MINUTE))
        ),
        memory=await async_memory_config(hass, entry),
        on_confirmation=lambda token, status: async_fire_confirmation(hass, entry, token, status),
        notices_file=_held_notices(hass, entry),
        on_model_round=None if health is None else health.async_observe,
        on_bad_history=partial(async_report_bad_history, hass),
        on_bad_memory_file=partial(async_report_bad_memory_file, hass),
        personas=persona_setups(entry),
    )
