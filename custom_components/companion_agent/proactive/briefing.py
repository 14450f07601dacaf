"""The first-turn briefing: who is speaking, and today's calendar and to-do lists.

A hook the host provides for each turn: on a conversation's first turn the engine runs its
``on_first_turn`` on the same path as the plugins' pre-reads (same deadline, injected once),
so the answer goes into the ``[memory context]`` block without spending a tool round. It
reads only what the person exposed to Assist.
"""

from __future__ import annotations

from datetime import timedelta

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.util import dt as dt_util

from ..const import LOGGER
from ..engine.plugins import TurnContext

MAX_EVENTS = 5


class HomeBriefing:
    """Read the person's name and today's plans from HA for one conversation's first turn."""

    plugin_id = "home"

    def __init__(self, hass: HomeAssistant, user_id: str | None) -> None:
        """Brief for ``user_id`` (None: a satellite with no signed-in person)."""
        self.hass = hass
        self.user_id = user_id

    async def on_first_turn(self, ctx: TurnContext) -> str | None:
        """Return the briefing lines that have something to say, or None."""
        lines = [await self._speaker(), await self._calendar(), self._todo()]
        return " ".join(line for line in lines if line) or None

    async def on_before_turn(self, user_text: str, ctx: TurnContext) -> str | None:
        """Add nothing to later turns."""
        return None

    async def on_after_turn(self, user_text: str, assistant_text: str, ctx: TurnContext) -> None:
        """Do nothing after a turn."""

    async def on_after_playback(
        self, user_text: str, assistant_text: str, ctx: TurnContext
    ) -> None:
        """Do nothing after playback."""

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
