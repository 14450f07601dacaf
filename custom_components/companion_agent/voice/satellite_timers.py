"""Timers started on a satellite's device, as the satellite's own timer events.

Home Assistant's intent timers (``HassStartTimer`` and the rest) tell the handler of the
device they were started on; a satellite that knows timers (wyoming-satellite 1.3 and
later) shows them and rings when one finishes, from these events.
"""

from __future__ import annotations

from homeassistant.components import intent
from wyoming.event import Event
from wyoming.timer import TimerCancelled, TimerFinished, TimerStarted, TimerUpdated


def timer_event(event_type: intent.TimerEventType, timer: intent.TimerInfo) -> Event:
    """Return the Wyoming event for one timer event; raise ValueError for an unknown kind."""
    match event_type:
        case intent.TimerEventType.STARTED:
            return TimerStarted(
                id=timer.id,
                total_seconds=timer.seconds,
                name=timer.name,
                start_hours=timer.start_hours,
                start_minutes=timer.start_minutes,
                start_seconds=timer.start_seconds,
            ).event()
        case intent.TimerEventType.UPDATED:
            return TimerUpdated(
                id=timer.id, is_active=timer.is_active, total_seconds=timer.seconds
            ).event()
        case intent.TimerEventType.CANCELLED:
            return TimerCancelled(id=timer.id).event()
        case intent.TimerEventType.FINISHED:
            return TimerFinished(id=timer.id).event()
    raise ValueError(f"unknown timer event {event_type!r}")
