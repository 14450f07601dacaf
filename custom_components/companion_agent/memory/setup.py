"""Memory for an entry: the backend its options name, installed first, and its repair issues.

The engine opens memory (``engine/memory/backends.py``: the embedded SQLite store by
default, mem0 on Qdrant, a Neo4j graph on top of either). mem0 and the Neo4j driver are
installed here on demand, with HA's requirement installer (``async_process_requirements``,
not manifest requirements), before the engine's settings are built. A requirement that
fails to install, or a backend that cannot be reached at setup, raises a repair issue;
turns answer either way (writes wait in the outbox, reads that miss are counted).
"""

from __future__ import annotations

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
)
from ..engine.chars import clean_text
from ..engine.engine import MemoryProblem
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
