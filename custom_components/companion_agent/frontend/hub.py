"""The card's event hub: typed events in from turns, voices and confirmations; out per viewer.

Publishing is HA's dispatcher, one signal per persona, so a publisher needs no object and an
entry reload loses no subscriber. Each WebSocket subscriber is a ``CardSubscription``: it
keeps only what its viewer may see and queues at most ``MAX_QUEUED`` events (the oldest go
first, and the card is told how many went), sent every ``FLUSH_INTERVAL`` seconds.

Who sees what (``visible``): a turn's events go to the person whose turn it is, and a
household turn's (a satellite with nobody signed in, or a turn the home began) to everyone.
A held action goes only to the person it was asked of; a household one to administrators,
the only people ``confirm_action`` lets approve it. Administrators see no other person's
turns or held actions: the card is a face, not a monitor.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect, async_dispatcher_send

from ..const import DOMAIN
from ..engine.json_types import JSONObject
from .events import CardEvent, ConfirmationChanged

MAX_QUEUED = 64
FLUSH_INTERVAL = 0.05

type Sender = Callable[[JSONObject], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Viewer:
    """The signed-in person a subscription serves."""

    user_id: str
    is_admin: bool


def signal_card(persona_id: str) -> str:
    """Return the dispatcher signal carrying one persona's card events."""
    return f"{DOMAIN}_card_{persona_id}"


@callback
def async_publish(hass: HomeAssistant, event: CardEvent) -> None:
    """Send an event to every card that follows its persona."""
    async_dispatcher_send(hass, signal_card(event.persona_id), event)


def visible(event: CardEvent, viewer: Viewer) -> bool:
    """Say whether ``viewer`` may see ``event``."""
    if isinstance(event, ConfirmationChanged):
        if event.user_id is None:
            return viewer.is_admin
        return event.user_id == viewer.user_id
    return event.user_id is None or event.user_id == viewer.user_id


class CardSubscription:
    """One card's bounded feed: what its viewer may see, in order, oldest dropped first."""

    def __init__(
        self,
        hass: HomeAssistant,
        persona_id: str,
        viewer: Viewer,
        send: Sender,
        *,
        capacity: int = MAX_QUEUED,
        interval: float = FLUSH_INTERVAL,
    ) -> None:
        """Follow nothing yet; ``send`` delivers one message to the card."""
        self._hass = hass
        self.persona_id = persona_id
        self.viewer = viewer
        self._send = send
        self._interval = interval
        self._queue: deque[JSONObject] = deque(maxlen=capacity)
        self._dropped = 0
        self._held = True
        self._timer: CALLBACK_TYPE | None = None
        self._unsubscribe: list[CALLBACK_TYPE] = []
        self.listeners: list[Callable[[CardEvent], None]] = []
        """Told every visible event (after it is queued): the subscription's own follow-ups."""

    @callback
    def async_start(self) -> None:
        """Follow the persona's events; hold them until ``async_release``."""
        self._unsubscribe.append(
            async_dispatcher_connect(self._hass, signal_card(self.persona_id), self._on_event)
        )

    @callback
    def async_release(self) -> None:
        """Send what was held (after the snapshot), then send as events come."""
        self._held = False
        self._flush()

    @callback
    def async_send(self, message: JSONObject) -> None:
        """Queue a message of the subscription's own (a snapshot part, the memories)."""
        self._enqueue(message)

    @callback
    def async_stop(self) -> None:
        """Stop following; drop what is queued."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        if self._timer is not None:
            self._timer()
            self._timer = None
        self._queue.clear()

    def add_stop(self, unsubscribe: CALLBACK_TYPE) -> None:
        """Call ``unsubscribe`` when the subscription stops."""
        self._unsubscribe.append(unsubscribe)

    @callback
    def _on_event(self, event: CardEvent) -> None:
        """Queue an event the viewer may see."""
        if not visible(event, self.viewer):
            return
        self._enqueue(event.payload())
        for listener in self.listeners:
            listener(event)

    def _enqueue(self, message: JSONObject) -> None:
        """Queue one message, dropping the oldest when full; schedule a send."""
        if len(self._queue) == self._queue.maxlen:
            self._dropped += 1
        self._queue.append(message)
        if not self._held and self._timer is None:
            self._timer = self._hass.loop.call_later(self._interval, self._flush).cancel

    @callback
    def _flush(self) -> None:
        """Send everything queued; first say how many were dropped, if any."""
        self._timer = None
        if self._dropped:
            self._send({"kind": "dropped", "count": self._dropped})
            self._dropped = 0
        while self._queue:
            self._send(self._queue.popleft())
