"""The last good ``[policy]`` marks of each persona's profile, kept in HA's storage.

A persona whose profile cannot be read (a broken or deleted file) goes on applying the
marks kept here, over reloads and restarts (``engine/personas.py``); with none kept, it
holds every action for a yes. Each persona's marks are saved whenever its profile is read
with marks other than those kept, together with the profile's id: marks kept of another
profile are never applied. One store per entry (``.storage/companion_agent.<entry id>.rules``);
a persona's marks go with its sub-entry, the store with the entry. A store that is not what
it should be keeps nothing (HA moves a corrupt file aside): its personas hold every action.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from homeassistant.core import HomeAssistant
from homeassistant.helpers.storage import Store

from ..const import DOMAIN, LOGGER
from ..engine.plugins import POLICY_LEVELS, PolicyLevel

STORAGE_VERSION = 1
MAX_MARKS = 10_000
"""The most marks read back per persona; more is not what this store writes: none kept."""

type StoredRules = dict[str, dict[str, object]]


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptMarks:
    """One persona's kept marks and the profile they were read from."""

    profile_id: str
    marks: Mapping[str, PolicyLevel]


class LastGoodRules:
    """The kept marks of an entry's personas, by sub-entry id; read at setup, saved on change."""

    def __init__(self, hass: HomeAssistant, entry_id: str) -> None:
        """Bind to the entry's store; nothing is read until ``async_load``."""
        self._store: Store[StoredRules] = Store(hass, STORAGE_VERSION, f"{DOMAIN}.{entry_id}.rules")
        self._kept: dict[str, KeptMarks] = {}

    async def async_load(self, persona_ids: Iterable[str]) -> None:
        """Read the kept marks of the entry's ``persona_ids``; forget those of any other.

        What is not a persona's marks is dropped: that persona keeps nothing.
        """
        stored = await self._store.async_load()
        if not isinstance(stored, dict):
            return
        personas = set(persona_ids)
        for persona_id, value in stored.items():
            if persona_id not in personas:
                continue
            if (kept := _kept_marks(value)) is not None:
                self._kept[persona_id] = kept
            else:
                LOGGER.warning("Ignored the kept rules of persona %s: not rules", persona_id)
        if stored.keys() - personas:  # removed while the entry was not loaded
            await self._async_save()

    def get(self, persona_id: str, profile_id: str) -> Mapping[str, PolicyLevel] | None:
        """Return the marks kept of ``profile_id`` for the persona, or None."""
        kept = self._kept.get(persona_id)
        return kept.marks if kept is not None and kept.profile_id == profile_id else None

    async def async_keep(
        self, persona_id: str, profile_id: str, marks: Mapping[str, PolicyLevel]
    ) -> None:
        """Keep the marks just read from the persona's profile; save them when they changed."""
        kept = KeptMarks(profile_id=profile_id, marks=MappingProxyType(dict(marks)))
        if self._kept.get(persona_id) == kept:
            return
        self._kept[persona_id] = kept
        await self._async_save()

    async def async_forget(self, persona_ids: Iterable[str]) -> None:
        """Forget the kept marks of personas that were removed."""
        removed = [pid for pid in persona_ids if self._kept.pop(pid, None) is not None]
        if removed:
            await self._async_save()

    async def async_remove(self) -> None:
        """Remove the store: the entry is gone."""
        await self._store.async_remove()

    async def _async_save(self) -> None:
        """Write every kept mark."""
        await self._store.async_save(
            {
                persona_id: {"profile": kept.profile_id, "marks": dict(kept.marks)}
                for persona_id, kept in self._kept.items()
            }
        )


def _kept_marks(value: object) -> KeptMarks | None:
    """Return stored marks as kept marks, or None when they are not that."""
    if not isinstance(value, dict):
        return None
    profile_id, marks = value.get("profile"), value.get("marks")
    if not isinstance(profile_id, str) or not isinstance(marks, dict) or len(marks) > MAX_MARKS:
        return None
    levels: dict[str, PolicyLevel] = {}
    for key, level in marks.items():
        matched = next((known for known in POLICY_LEVELS if known == level), None)
        if not isinstance(key, str) or matched is None:
            return None
        levels[key] = matched
    return KeptMarks(profile_id=profile_id, marks=MappingProxyType(levels))
