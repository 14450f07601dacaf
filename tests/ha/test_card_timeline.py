"""Subtitles follow the audio: a turn's card events released as heard, through a real HA loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect, async_dispatcher_send

from custom_components.companion_agent.engine.events import (
    SentenceOutput,
    ToolCallEvent,
    TurnResult,
)
from custom_components.companion_agent.engine.speech.synthesizer import AudioChunk
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.engine.turn.sink import TurnSink
from custom_components.companion_agent.frontend import timeline
from custom_components.companion_agent.frontend.events import CardEvent
from custom_components.companion_agent.frontend.hub import signal_card
from custom_components.companion_agent.frontend.timeline import TurnAudience, TurnTimeline
from custom_components.companion_agent.voice.sentence_timing import (
    SpokenReport,
    SpokenSentences,
    signal_spoken,
)

VOICE = "tts.card_voice"
SATELLITE = "assist_satellite.kitchen"
RATE = 16000  # 16 kHz, 16-bit mono: 32,000 bytes a second


def sentence(text: str, *actions: str) -> SentenceOutput:
    """Return a sentence whose speech is its text."""
    return SentenceOutput(display_text=text, tts_text=text, actions=actions)


class Followed:
    """A turn followed by a timeline, and what the persona's cards were sent."""

    def __init__(self, hass: HomeAssistant, *, voice: str | None, satellite: str | None = None):
        """Start a turn, its timeline, and a consumer of its items."""
        self.hass = hass
        self.events: list[CardEvent] = []
        # The runner's side of a turn, driven by hand: what the timeline follows is the face.
        self.sink = TurnSink(
            "trace-1",
            hass.loop.time() + 60,
            on_played=lambda _result: None,
            on_cut=lambda _heard, _outcome: None,
        )
        self.turn = Turn(self.sink)
        audience = TurnAudience(persona_id="p1", user_id=None, voice=voice, satellite=satellite)
        self._stop = async_dispatcher_connect(hass, signal_card("p1"), self._take)
        items = TurnTimeline(hass, audience, self.turn).items(self.turn.items())
        self.task = hass.async_create_task(self._consume(items))

    @callback
    def _take(self, event: CardEvent) -> None:
        """Note an event the cards were sent."""
        self.events.append(event)

    async def _consume(self, items: AsyncIterator[Any]) -> None:
        """Take the items as the ChatLog would."""
        async for _item in items:
            pass

    def kinds(self) -> list[str]:
        """Return the kinds published so far."""
        return [event.kind for event in self.events]

    def texts(self) -> list[tuple[str, str]]:
        """Return each published sentence's text and timing."""
        return [(e.text, e.timing) for e in self.events if e.kind == "sentence"]

    async def settle(self) -> None:
        """Let the loop run what is ready."""
        for _ in range(5):
            await asyncio.sleep(0)

    def finish(self) -> None:
        """End the turn as complete."""
        self.sink.finish(TurnResult(outcome="complete", text=""))

    def heard(self, text: str, delay: float = 0.0) -> None:
        """Say our voice's stream plays ``text`` ``delay`` seconds from now."""
        report = SpokenReport(text=text, heard_at=self.hass.loop.time() + delay)
        async_dispatcher_send(self.hass, signal_spoken(VOICE), report)


async def test_without_our_voice_sentences_go_out_as_written(hass: HomeAssistant) -> None:
    """Typed chat: each sentence at once, with its emotion; tool calls in their place."""
    followed = Followed(hass, voice=None)
    followed.sink.put(sentence("Hello.", "joy"))
    followed.sink.put(
        ToolCallEvent(tool_id="c1", tool_name="HassTurnOn", args={}, status="running")
    )
    await followed.settle()
    assert followed.kinds() == ["turn_started", "sentence", "emotion", "tool_call"]
    followed.finish()
    await followed.settle()
    assert followed.kinds()[-1] == "turn_ended"


async def test_a_voiced_sentence_waits_for_its_audio(hass: HomeAssistant) -> None:
    """Written, nothing; the voice says it plays in 0.2 s: out then, and the end after it."""
    followed = Followed(hass, voice=VOICE)
    followed.sink.put(sentence("Good morning."))
    followed.sink.put(
        ToolCallEvent(tool_id="c1", tool_name="GetWeather", args={}, status="running")
    )
    followed.finish()
    await followed.settle()
    assert followed.kinds() == ["turn_started"]  # the tool call waits behind the sentence
    followed.heard("Good  morning.", delay=0.2)
    await followed.settle()
    assert followed.kinds() == ["turn_started"]
    await asyncio.sleep(0.25)
    assert followed.texts() == [("Good morning.", "audio")]
    assert followed.kinds() == ["turn_started", "sentence", "tool_call", "turn_ended"]


async def test_a_sentence_the_voice_skipped_goes_out_before_the_next_it_played(
    hass: HomeAssistant,
) -> None:
    """The voice reports the second sentence: the first goes out as written, then it."""
    followed = Followed(hass, voice=VOICE)
    followed.sink.put(sentence("One."))
    followed.sink.put(sentence("Two."))
    await followed.settle()
    followed.heard("Two.")
    await followed.settle()
    assert followed.texts() == [("One.", "written"), ("Two.", "audio")]


async def test_a_sentence_the_voice_never_reports_goes_out_as_written(
    hass: HomeAssistant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A voice that failed: after the wait the subtitle is shown anyway."""
    monkeypatch.setattr(timeline, "SPOKEN_WAIT", 0.1)
    followed = Followed(hass, voice=VOICE)
    followed.sink.put(sentence("Are you there?"))
    await followed.settle()
    assert followed.texts() == []
    await asyncio.sleep(0.15)
    assert followed.texts() == [("Are you there?", "written")]


async def test_a_cut_turn_drops_what_was_not_heard(hass: HomeAssistant) -> None:
    """The person spoke over it: the sentence still waiting is never shown."""
    followed = Followed(hass, voice=VOICE)
    followed.sink.put(sentence("First."))
    followed.sink.put(sentence("Second."))
    await followed.settle()
    followed.heard("First.")
    await followed.settle()
    followed.turn.cancel("the person spoke")
    followed.sink.finish(TurnResult(outcome="interrupted", text=""))
    await followed.settle()
    assert followed.texts() == [("First.", "audio")]
    ended = [e for e in followed.events if e.kind == "turn_ended"]
    assert [e.outcome for e in ended] == ["interrupted"]


async def test_the_satellite_listening_again_drops_the_sentences_still_to_play(
    hass: HomeAssistant,
) -> None:
    """A finished turn spoken over on its satellite: sentences scheduled later never show."""
    hass.states.async_set(SATELLITE, "responding")
    followed = Followed(hass, voice=VOICE, satellite=SATELLITE)
    followed.sink.put(sentence("First."))
    followed.sink.put(sentence("Second."))
    followed.finish()
    await followed.settle()
    followed.heard("First.")
    followed.heard("Second.", delay=5.0)
    await followed.settle()
    hass.states.async_set(SATELLITE, "listening")
    await followed.settle()
    assert followed.texts() == [("First.", "audio")]
    assert followed.kinds()[-1] == "turn_ended"


async def test_a_stream_reports_each_sentence_when_it_begins_to_play(
    hass: HomeAssistant,
) -> None:
    """Audio comes faster than it plays: sentence 2 is heard after sentence 1's 0.5 s."""
    reports: list[SpokenReport] = []

    @callback
    def take(report: SpokenReport) -> None:
        """Note a report."""
        reports.append(report)

    stop = async_dispatcher_connect(hass, signal_spoken(VOICE), take)
    spoken = SpokenSentences(hass, VOICE)

    async def sentences() -> AsyncIterator[str]:
        """Yield the stream's two sentences."""
        for text in ("One.", "Two."):
            yield text

    async def audio() -> AsyncIterator[AudioChunk]:
        """Yield 0.5 s of audio per sentence, in two chunks each, at once."""
        async for _text in spoken.texts(sentences()):
            pass
        for index in (0, 1):
            for _half in (0, 1):
                yield AudioChunk(sentence=index, rate=RATE, width=2, channels=1, audio=bytes(8000))

    start = hass.loop.time()
    chunks = [chunk async for chunk in spoken.audio(audio())]  # type: ignore[arg-type]
    stop()
    assert len(chunks) == 4
    assert [r.text for r in reports] == ["One.", "Two."]
    assert reports[0].heard_at - start < 0.1
    assert reports[1].heard_at - reports[0].heard_at == pytest.approx(0.5, abs=0.01)


async def test_the_end_waits_for_the_items_the_host_has_not_taken_yet(
    hass: HomeAssistant,
) -> None:
    """A turn done writing before its host read it all: the end still comes last."""
    followed = Followed(hass, voice=None)
    followed.sink.put(sentence("One."))
    followed.sink.put(sentence("Two."))
    followed.finish()  # before the consumer has taken either
    await asyncio.sleep(0)  # the result's callbacks run first
    await followed.settle()
    assert followed.kinds() == ["turn_started", "sentence", "sentence", "turn_ended"]
