"""Wyoming events in the form a snapshot keeps: the type, the data, a payload by its size."""

from __future__ import annotations

from collections.abc import Iterable

from wyoming.event import Event


def wire_form(events: Iterable[Event]) -> list[dict[str, object]]:
    """Return each event's type and data, and its payload's length (None: no payload)."""
    return [
        {
            "type": event.type,
            "data": event.data,
            "payload_bytes": None if event.payload is None else len(event.payload),
        }
        for event in events
    ]
