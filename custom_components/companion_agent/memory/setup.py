"""An entry's memory: its backend installed first, its repair issues, and what goes with a persona.

The engine opens memory (``engine/memory/backends.py``: the embedded SQLite store by
default, mem0 on Qdrant, a Neo4j graph on top of either). mem0 and the Neo4j driver are
installed here on demand, with HA's requirement installer (``async_process_requirements``,
not manifest requirements), before the engine's settings are built. A requirement that
fails to install, or a backend that cannot be reached at setup, raises a repair issue;
turns answer either way (writes wait in the outbox, reads that miss are counted).

**Removing a persona removes what it remembered**: memories, graph, exchanges, queued
writes. Deleting a persona (its sub-entry) in the UI is explicit — HA asks first — so
nothing of it is kept behind where nothing in the product could reach it any more: its
memories in every backend (the embedded store, mem0, Neo4j), its graph, its conversations
and recent windows, and its writes still waiting in the outbox go, and a tombstone refuses
any of its writes still on their way. Removing the whole entry does the same for every
persona of it and deletes the entry's outbox file. A persona removed some other way (a
version before this one) is forgotten with ``companion_agent.forget`` by its id.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.requirements import RequirementsNotFound, async_process_requirements

from ..const import (
    CONF_MEMORY_BACKEND,
    DOMAIN,
    ISSUE_MEMORY_REQUIREMENTS,
    ISSUE_MEMORY_UNREACHABLE,
    LOGGER,
    MEMORY_EMBEDDED,
    MEMORY_OUTBOX_FILE,
    STORAGE_FOLDER,
)
from ..engine.chars import clean_text
from ..engine.engine import Engine, MemoryProblem
from ..engine.memory.backends import MemoryConfig
from ..engine.redaction import scrub_text
from ..runtime import CompanionConfigEntry
from .options import memory_config


async def async_memory_config(
    hass: HomeAssistant, entry: CompanionConfigEntry
) -> MemoryConfig | None:
    """Return the memory the entry's options name, its requirements installed.

    None when a requirement could not be installed: memory is off, a repair issue says why.
    """
    config = memory_config(entry.options, entry_id=entry.entry_id, data=entry.data)
    try:
        if config.requirements:
            await async_process_requirements(hass, DOMAIN, list(config.requirements))
    except RequirementsNotFound as err:
        _async_issue(hass, entry, ISSUE_MEMORY_REQUIREMENTS, str(err.requirements))
        return None
    return config


@callback
def async_memory_started(
    hass: HomeAssistant, entry: CompanionConfigEntry, problem: MemoryProblem | None
) -> None:
    """Raise or clear the entry's memory issues after the engine opened its memory."""
    if problem is not None:
        _async_issue(hass, entry, ISSUE_MEMORY_UNREACHABLE, problem.detail)
        if not problem.opened:
            return
    else:
        ir.async_delete_issue(hass, DOMAIN, f"{ISSUE_MEMORY_UNREACHABLE}_{entry.entry_id}")
    ir.async_delete_issue(hass, DOMAIN, f"{ISSUE_MEMORY_REQUIREMENTS}_{entry.entry_id}")


@callback
def _async_issue(hass: HomeAssistant, entry: CompanionConfigEntry, kind: str, detail: str) -> None:
    """Raise the entry's memory issue of ``kind`` (marked with the entry, for cleanup)."""
    detail = scrub_text(detail)  # a backend's error may name a URL with its credentials
    LOGGER.warning("Memory is not available: %s", detail)
    ir.async_create_issue(
        hass,
        DOMAIN,
        f"{kind}_{entry.entry_id}",
        is_fixable=False,
        severity=ir.IssueSeverity.ERROR,
        translation_key=kind,
        translation_placeholders={
            "backend": str(entry.options.get(CONF_MEMORY_BACKEND, MEMORY_EMBEDDED)),
            "detail": clean_text(detail, 200),
        },
        data={"entry_id": entry.entry_id},
    )


# Removing a persona removes what it remembered.
async def async_remove_personas(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    engine: Engine,
    personas: Iterable[str],
    *,
    started: bool,
) -> None:
    """Forget everything of ``personas`` through ``engine``; never raise.

    ``started`` False: the entry is being removed; the engine is opened for this only (its
    queue is not drained: nothing of these personas is sent to a model again), closed
    after, and the entry's outbox file deleted.
    """
    wanted = sorted(set(personas))
    try:
        if not started:
            await engine.start(drain=False)
        for persona_id in wanted:
            removed = await engine.forget_persona(persona_id)
            LOGGER.debug("Persona %s removed with %d memories", persona_id, removed)
    except Exception:
        LOGGER.exception("Could not remove everything of personas %s", wanted)
    finally:
        if not started:
            await engine.close()
    if not started:
        outbox = Path(hass.config.path(STORAGE_FOLDER, f"{entry.entry_id}.{MEMORY_OUTBOX_FILE}"))
        await hass.async_add_executor_job(_delete_sqlite, outbox)


def _delete_sqlite(path: Path) -> None:
    """Delete a SQLite file with its WAL and shared-memory files (blocking)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
