"""The ``state_chat`` plugin: speak when a followed entity enters a state (someone comes home).

The host reports state changes through ``PluginContext.states``; a change *into* ``to_state``
(not a repeat of it) asks for a proactive turn, at most once per ``cooldown_seconds`` per
entity and never in the quiet hours.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from custom_components.companion_agent.engine.plugins import (
    PluginContext,
    ProactiveEmitter,
    ProactiveRequest,
    TriggerPlugin,
)
from custom_components.companion_agent.engine.proactive import (
    QuietHours,
    QuietHoursError,
    StateChange,
    bad_speaker,
)

LOGGER = logging.getLogger(__name__)
MAX_PENDING = 8


class StateChatPlugin(TriggerPlugin):
    """Ask for a turn when a followed entity changes into the configured state."""

    def __init__(self, context: PluginContext) -> None:
        """Read and check the settings; no I/O."""
        super().__init__(context)
        config = context.config
        self.entities = config.texts("entities")
        self.to_state = config.text("to_state")
        self.instruction = config.text("instruction")
        self.targets = config.texts("targets")
        if (target := bad_speaker(self.targets, context.speakers)) is not None:
            raise config.error("targets", f"{target!r} is not an assist_satellite or media_player")
        cooldown = config.integer("cooldown_seconds")
        if cooldown < 0:
            raise config.error("cooldown_seconds", "cannot be negative")
        self.cooldown = timedelta(seconds=cooldown)
        try:
            self.quiet = QuietHours.parse(config.text("quiet_start"), config.text("quiet_end"))
        except QuietHoursError as err:
            raise config.error(f"quiet_{err.end}", str(err)) from err
        self._last: dict[str, datetime] = {}
        self._emit: ProactiveEmitter | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._pending: set[asyncio.Task[None]] = set()

    async def start(self, emit: ProactiveEmitter) -> None:
        """Follow the entities, if the host can report their states."""
        if not self.entities:
            return
        if self.context.states is None:
            LOGGER.warning("%s: this host reports no state changes; staying quiet", self.plugin_id)
            return
        self._emit = emit
        self._unsubscribe = self.context.states.watch_states(self.entities, self._changed)

    async def stop(self) -> None:
        """Stop following; nothing is emitted after this."""
        self._emit = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for task in set(self._pending):
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)

    def _changed(self, change: StateChange) -> None:
        """Ask for a turn when the change enters the state and nothing holds it back."""
        if self._emit is None or change.new_state != self.to_state:
            return
        if change.old_state == self.to_state or change.old_state is None:
            return  # not an arrival: a repeat, or the entity appearing at start-up
        now = self.context.now()
        last = self._last.get(change.entity_id)
        if self.quiet.contains(now) or (last is not None and now - last < self.cooldown):
            return
        if len(self._pending) >= MAX_PENDING:
            return
        self._last[change.entity_id] = now
        text = self.instruction.replace("{name}", change.name or change.entity_id)
        request = ProactiveRequest(
            source=self.plugin_id,
            prompt=text.replace("{entity}", change.entity_id),
            targets=self.targets,
        )
        task = asyncio.create_task(_send(self._emit, request), name=f"{self.plugin_id} speaks")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)


async def _send(emit: ProactiveEmitter, request: ProactiveRequest) -> None:
    """Hand one request to the host; a failure is logged, never raised."""
    try:
        await emit(request)
    except Exception:
        LOGGER.warning("state_chat could not ask to speak", exc_info=True)
