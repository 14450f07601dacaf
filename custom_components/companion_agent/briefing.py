"""The first-turn briefing: who is speaking, and today's calendar and to-do lists.

It is reference data for the ``[memory context]`` block of the first user message of a
conversation, read from what the person exposed to Assist, never spending a tool round.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.util import dt as dt_util

from .const import LOGGER
from .engine.prompt import ContextSnippet

SOURCE = "home"
MAX_EVENTS = 5


class HomeBriefing:
    """Read the person's name and today's plans from HA for one conversation's first turn."""

    def __init__(self, hass: HomeAssistant, user_id: str | None) -> None:
        """Brief for ``user_id`` (None: a satellite with no signed-in person)."""
        self.hass = hass
        self.user_id = user_id

    async def read(self) -> Sequence[ContextSnippet]:
        """Return the briefing lines that have something to say."""
        lines = [await self._speaker(), await self._calendar(), self._todo()]
        return tuple(ContextSnippet(source=SOURCE, text=line) for line in lines if line)

    async def _speaker(self) -> str:
        """Name the person speaking, if HA knows them."""
        if self.user_id is None:
            return ""
        user = await self.hass.auth.async_get_user(self.user_id)
        return f"The person speaking is {user.name}." if user and user.name else ""

    async def _calendar(self) -> str:
        """List today's remaining events of the exposed calendars."""
        calendars = self._exposed("calendar")
        if not calendars:
            return ""
        now = dt_util.now()
        try:
            found = await self.hass.services.async_call(
                "calendar",
                "get_events",
                {
                    "entity_id": calendars,
                    "start_date_time": now,
                    "end_date_time": dt_util.start_of_local_day() + timedelta(days=1),
                },
                blocking=True,
                return_response=True,
            )
        except HomeAssistantError:
            LOGGER.debug("Could not read today's calendar", exc_info=True)
            return ""
        events: list[str] = []
        for listing in (found or {}).values():
            entries = listing.get("events") if isinstance(listing, dict) else None
            for event in entries if isinstance(entries, list) else []:
                if isinstance(event, dict):
                    events.append(f"{event.get('start')} {event.get('summary')}")
        if not events:
            return "Nothing else is on the calendar today."
        return "Today's calendar: " + "; ".join(sorted(events)[:MAX_EVENTS]) + "."

    def _todo(self) -> str:
        """Count the open items of the exposed to-do lists."""
        counts = []
        for entity_id in self._exposed("todo"):
            state = self.hass.states.get(entity_id)
            if state is not None and state.state.isdigit() and int(state.state) > 0:
                counts.append(f"{state.name}: {state.state} open")
        return "To-do lists: " + ", ".join(counts) + "." if counts else ""

    def _exposed(self, domain: str) -> list[str]:
        """Return the entities of ``domain`` the person exposed to Assist."""
        return [
            entity_id
            for entity_id in self.hass.states.async_entity_ids(domain)
            if async_should_expose(self.hass, CONVERSATION_DOMAIN, entity_id)
        ]
