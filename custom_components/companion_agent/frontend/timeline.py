"""A turn's card events in the order, and at the time, they are heard; which turns cards follow.

The cards follow a person's turn (``async_follow_turn``) and one the home began
(``async_follow_proactive``), each through a ``TurnTimeline`` for the persona's cards, with
the voice that speaks it (when it is ours, its sentences go out as they are heard) and the
satellite that plays it.

Sentences reach the card as they are spoken, not as they are written. A turn that one of
our voices speaks (the Assist pipeline's TTS is ours: ``tts.async_pipeline_voice``) waits
for that voice's stream to say when each sentence's audio begins (``voice/sentence_timing``);
a sentence the voice never reports in ``SPOKEN_WAIT`` seconds (it failed, or cut the text
otherwise) goes out as written, and one the voice skipped goes out before the next one it reported.
A turn no voice of ours carries (typed chat, another TTS) goes out as written. Tool calls,
and the end of the turn, wait behind the sentences before them.

A turn the person cut off (cancelled, or its satellite listening again) drops what was not
heard yet. Bounded: at most ``MAX_PENDING`` sentences wait, and a timeline lives at most
``MAX_LIFE`` seconds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

from homeassistant.components.assist_satellite.entity import AssistSatelliteState
from homeassistant.components.conversation import ConversationInput
from homeassistant.core import (
    CALLBACK_TYPE,
    Event,
    EventStateChangedData,
    HomeAssistant,
    callback,
    split_entity_id,
)
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.event import async_track_state_change_event

from ..const import DOMAIN
from ..engine.events import OutputItem, SentenceOutput, ToolCallEvent, TurnResult
from ..engine.turn.handle import Turn
from ..engine.voices import Speaker
from ..voice.sentence_timing import SpokenReport, signal_spoken, speech_key
from .events import CardEvent, EmotionShown, SentenceSpoken, ToolCallShown, TurnEnded, TurnStarted
from .hub import async_publish

SPOKEN_WAIT = 15.0
MAX_PENDING = 128
MAX_LIFE = 300.0


@dataclass(slots=True, kw_only=True)
class _Entry:
    """One event waiting its turn: due at ``at`` (loop time), or at ``deadline`` unheard."""

    event: CardEvent
    key: str | None = None
    """The sentence's speech text, while its audio is awaited."""
    at: float | None = None
    deadline: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnAudience:
    """Whose turn it is, and what carries it: our voice, a satellite."""

    persona_id: str
    user_id: str | None
    emotions: frozenset[str] = frozenset()
    """The persona's emotion tags (its profile's), lower-cased; its other tags are gestures."""
    voice: str | None = None
    """Our TTS entity that speaks the turn; None: sentences go out as written."""
    satellite: str | None = None
    recognised: str | None = None
    """Whose voice the turn was recognised as (their name); None: typed, or nobody's."""


class TurnTimeline:
    """Release one turn's card events as they are heard."""

    def __init__(self, hass: HomeAssistant, audience: TurnAudience, turn: Turn) -> None:
        """Follow ``turn`` for ``audience``; the voice's reports and the satellite too."""
        self._hass = hass
        self._audience = audience
        self._persona = audience.persona_id
        self._user = audience.user_id
        self._trace_id = turn.trace_id
        self._queue: deque[_Entry] = deque()
        self._timer: CALLBACK_TYPE | None = None
        self._unsubscribe: list[CALLBACK_TYPE] = []
        self._ended = False
        self._result: TurnResult | None = None
        self._taken = False
        """Whether the host has taken every item: the end goes out after the last of them."""
        self._publish(
            TurnStarted(
                persona_id=self._persona,
                user_id=self._user,
                trace_id=turn.trace_id,
                recognised=audience.recognised,
            )
        )
        if audience.voice is not None:
            self._unsubscribe.append(
                async_dispatcher_connect(hass, signal_spoken(audience.voice), self._on_spoken)
            )
        if audience.satellite is not None:
            self._unsubscribe.append(
                async_track_state_change_event(hass, audience.satellite, self._on_satellite)
            )
        self._unsubscribe.append(hass.loop.call_later(MAX_LIFE, self._expire).cancel)
        turn.on_cancel(lambda _reason: self._cut())
        turn.on_finished(self._on_result)

    async def items(self, items: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Pass the turn's items on, taking its sentences and tool calls for the card."""
        try:
            async for item in self._taken_from(items):
                yield item
        finally:
            self._taken = True
            self._end()

    async def _taken_from(self, items: AsyncIterator[OutputItem]) -> AsyncIterator[OutputItem]:
        """Take each item's sentence or tool call for the card; pass the item on."""
        async for item in items:
            match item:
                case SentenceOutput() as sentence:
                    self._sentence(sentence)
                case ToolCallEvent() as event:
                    self._add(
                        _Entry(
                            event=ToolCallShown(
                                persona_id=self._persona,
                                user_id=self._user,
                                trace_id=self._trace_id,
                                tool_id=event.tool_id,
                                name=event.tool_name,
                                status=event.status,
                            )
                        )
                    )
                case _:
                    pass
            yield item

    def _sentence(self, sentence: SentenceOutput) -> None:
        """Queue a sentence: awaited from the voice when ours speaks it, else as written."""
        if not sentence.display_text.strip() and not sentence.actions:
            return
        known = self._audience.emotions
        emotions = [a.lower() for a in sentence.actions if a.lower() in known]
        event = SentenceSpoken(
            persona_id=self._persona,
            user_id=self._user,
            trace_id=self._trace_id,
            text=sentence.display_text.strip(),
            gestures=tuple(a for a in sentence.actions if a.lower() not in known),
            emotion=emotions[-1] if emotions else None,
        )
        voiced = self._audience.voice is not None and bool(sentence.tts_text.strip())
        if voiced and sum(1 for e in self._queue if e.key is not None) >= MAX_PENDING:
            voiced = False
        entry = _Entry(event=event)
        if voiced:
            entry.key = speech_key(sentence.tts_text)
            entry.deadline = self._hass.loop.time() + SPOKEN_WAIT
        self._add(entry)

    def _add(self, entry: _Entry) -> None:
        """Queue an entry behind the others; release what is due."""
        self._queue.append(entry)
        self._advance()

    @callback
    def _on_spoken(self, report: SpokenReport) -> None:
        """Take the voice's word that a sentence is heard at ``report.heard_at``."""
        key = speech_key(report.text)
        awaited = [e for e in self._queue if e.key is not None]
        match = next((e for e in awaited if e.key == key), None)
        if match is None:
            return
        for entry in awaited:
            if entry is match:
                break
            entry.key = None  # skipped by the voice: out as written, before this one
        match.key = None
        match.at = report.heard_at
        if isinstance(match.event, SentenceSpoken):
            match.event = replace(match.event, timing="audio")
        self._advance()

    @callback
    def _on_satellite(self, event: Event[EventStateChangedData]) -> None:
        """Drop what was not heard when the satellite listens again; idle: all was heard."""
        new = event.data["new_state"]
        if new is None or not self._queue:
            return
        if new.state == AssistSatelliteState.LISTENING:
            self._cut()
        elif new.state == AssistSatelliteState.IDLE:
            for entry in self._queue:
                entry.at = None
            self._advance()

    def _advance(self) -> None:
        """Publish the entries at the head that are due; wake up for the next one."""
        if self._timer is not None:
            self._timer()
            self._timer = None
        now = self._hass.loop.time()
        while self._queue:
            head = self._queue[0]
            if head.key is not None and head.deadline <= now:
                head.key = None  # the voice never said: out as written
            if head.key is not None:
                self._wake(head.deadline)
                return
            if head.at is not None and head.at > now:
                self._wake(head.at)
                return
            self._queue.popleft()
            self._release(head.event)
        if self._ended:
            self._stop()

    def _wake(self, at: float) -> None:
        """Advance again at loop time ``at``."""
        self._timer = self._hass.loop.call_at(at, self._advance).cancel

    def _release(self, event: CardEvent) -> None:
        """Publish an event, and a sentence's emotion with it."""
        self._publish(event)
        if isinstance(event, SentenceSpoken) and event.emotion is not None:
            shown = EmotionShown(
                persona_id=self._persona,
                user_id=self._user,
                trace_id=self._trace_id,
                emotion=event.emotion,
            )
            self._publish(shown)

    def _publish(self, event: CardEvent) -> None:
        """Send an event to the persona's cards."""
        async_publish(self._hass, event)

    def _cut(self) -> None:
        """Drop the sentences not heard yet; tool calls and the end still go out."""
        kept = [e for e in self._queue if not isinstance(e.event, SentenceSpoken)]
        self._queue = deque(replace(e, at=None) for e in kept)
        self._advance()

    def _on_result(self, result: TurnResult) -> None:
        """Note how the turn ended; end it for the card once its items are taken too."""
        self._result = result
        self._end()

    def _end(self, *, taken: bool = False) -> None:
        """Queue the end of the turn behind what is still to be heard (once, when known)."""
        if self._ended or self._result is None or not (self._taken or taken):
            return
        ended = TurnEnded(
            persona_id=self._persona,
            user_id=self._user,
            trace_id=self._trace_id,
            outcome=self._result.outcome,
        )
        self._ended = True
        self._add(_Entry(event=ended))

    @callback
    def _expire(self) -> None:
        """Give up waiting: publish what is queued, then stop."""
        for entry in self._queue:
            entry.key = None
            entry.at = None
        self._end(taken=True)
        self._advance()
        self._stop()

    def _stop(self) -> None:
        """Stop following the voice and the satellite."""
        if self._timer is not None:
            self._timer()
            self._timer = None
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()


# Which turns the cards follow.
@callback
def async_follow_turn(
    hass: HomeAssistant,
    persona_id: str,
    user_input: ConversationInput,
    turn: Turn,
    *,
    voice: str | None,
    emotions: frozenset[str],
    speaker: Speaker | None = None,
) -> AsyncIterator[OutputItem]:
    """Return the turn's items, followed for the persona's cards on their way.

    ``voice``: our TTS entity the turn's pipeline speaks with (``tts.async_pipeline_voice``).
    ``speaker``: who speaks it. A turn spoken aloud was heard by the room: recognised or
    not, it stays the household's on the cards, which show whose voice it was recognised as.
    """
    heard = speaker is not None and speaker.heard and speaker.user_id is not None
    audience = TurnAudience(
        persona_id=persona_id,
        user_id=user_input.context.user_id,
        emotions=emotions,
        voice=voice,
        satellite=user_input.satellite_id,
        recognised=speaker.name if heard and speaker is not None else None,
    )
    return TurnTimeline(hass, audience, turn).items(turn.items())


@callback
def async_follow_proactive(
    hass: HomeAssistant,
    persona_id: str,
    turn: Turn,
    tts_engine: str,
    target: str,
    *,
    emotions: frozenset[str],
) -> AsyncIterator[OutputItem]:
    """Return a turn the home began (no person: everyone's), followed for the cards.

    ``tts_engine`` speaks it (heard when it is one of our voices); ``target`` plays it.
    """
    registered = er.async_get(hass).async_get(tts_engine)
    ours = registered is not None and registered.platform == DOMAIN
    audience = TurnAudience(
        persona_id=persona_id,
        user_id=None,
        emotions=emotions,
        voice=tts_engine if ours else None,
        satellite=target if split_entity_id(target)[0] == "assist_satellite" else None,
    )
    return TurnTimeline(hass, audience, turn).items(turn.items())
