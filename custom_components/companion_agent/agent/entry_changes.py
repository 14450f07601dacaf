"""What changed in an entry: a persona's own settings reach its agent; the rest reloads.

A persona's form (profile, prompt, models per role) changes only the snapshot new turns
of that persona take, so a turn already running ends on what it started with and the other
personas, voices and tasks go on undisturbed. Any other change (the server, the options,
a sub-entry added, removed or of another kind) reloads the entry.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_send

from ..const import SUBENTRY_CONVERSATION, signal_persona_changed
from ..runtime import CompanionConfigEntry


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryShape:
    """An entry's settings at one moment: data, options, and each sub-entry's."""

    data: dict[str, Any]
    options: dict[str, Any]
    subentries: dict[str, tuple[str, str, dict[str, Any]]]
    """Each sub-entry's kind, title and data, by id."""

    @classmethod
    def of(cls, entry: CompanionConfigEntry) -> EntryShape:
        """Copy the entry's settings as they are now."""
        return cls(
            data=copy.deepcopy(dict(entry.data)),
            options=copy.deepcopy(dict(entry.options)),
            subentries={
                sub.subentry_id: (sub.subentry_type, sub.title, copy.deepcopy(dict(sub.data)))
                for sub in entry.subentries.values()
            },
        )

    def personas_changed(self, later: EntryShape) -> set[str] | None:
        """Return the personas whose own settings alone changed; None: reload the entry."""
        if (self.data, self.options) != (later.data, later.options):
            return None
        if self.subentries.keys() != later.subentries.keys():
            return None
        changed: set[str] = set()
        for sub_id, (kind, title, data) in self.subentries.items():
            new_kind, new_title, new_data = later.subentries[sub_id]
            if (kind, title, data) == (new_kind, new_title, new_data):
                continue
            if kind != SUBENTRY_CONVERSATION or (new_kind, new_title) != (kind, title):
                return None
            changed.add(sub_id)
        return changed


class EntryChanges:
    """Follow one loaded entry's changes (its update listener)."""

    def __init__(self, entry: CompanionConfigEntry) -> None:
        """Remember the entry's settings as it loaded."""
        self._last = EntryShape.of(entry)

    async def async_updated(self, hass: HomeAssistant, entry: CompanionConfigEntry) -> None:
        """Tell the personas whose settings changed; reload the entry for anything else."""
        now = EntryShape.of(entry)
        changed = self._last.personas_changed(now)
        self._last = now
        if changed is None:
            await hass.config_entries.async_reload(entry.entry_id)
            return
        for sub_id in changed:
            async_dispatcher_send(hass, signal_persona_changed(sub_id))
