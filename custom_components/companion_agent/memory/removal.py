"""Removing a persona removes what it remembered: memories, graph, exchanges, queued writes.

Deleting a persona (its sub-entry) in the UI is explicit — HA asks first — so nothing of it
is kept behind where nothing in the product could reach it any more: its memories in every
backend (the embedded store, mem0, Neo4j), its graph, its conversations and recent windows,
and its writes still waiting in the outbox go, and a tombstone refuses any of its writes
still on their way. Removing the whole entry does the same for every persona of it and
deletes the entry's outbox file. A persona removed some other way (a version before this
one) is forgotten with ``companion_agent.forget`` by its id.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from homeassistant.core import HomeAssistant

from ..const import LOGGER, MEMORY_OUTBOX_FILE, STORAGE_FOLDER
from ..engine.engine import Engine
from ..runtime import CompanionConfigEntry


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
