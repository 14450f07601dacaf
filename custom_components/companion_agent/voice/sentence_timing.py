"""When each sentence of one of our TTS streams begins to be heard: the card follows it.

A TTS stream hands its audio to HA as it is made, faster than it plays; the device plays
it in real time. ``SpokenSentences`` keeps that player's clock (an ``AudioTimeline``: a
chunk begins playing when the audio before it has played, or when it arrives after a gap),
so a sentence is heard from the moment its first chunk begins. It tells the card
(``signal_spoken`` of the TTS entity) the sentence's speech text and that moment, as the
chunk leaves the stream. The texts are the ones the stream speaks: noted as they pass
(``texts``), or a turn's own list (``TurnSpeech.texts``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass

from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_send

from ..const import DOMAIN
from ..engine.speech import AudioChunk, AudioTimeline

MAX_SENTENCES = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class SpokenReport:
    """A sentence's speech text and when (loop time) its audio begins to be heard."""

    text: str
    heard_at: float


def signal_spoken(tts_entity_id: str) -> str:
    """Return the dispatcher signal a TTS entity's streams report their sentences on."""
    return f"{DOMAIN}_spoken_{tts_entity_id}"


def speech_key(text: str) -> str:
    """Return the form two speech texts are compared in: whitespace collapsed."""
    return " ".join(text.split())


class SpokenSentences:
    """Follow one TTS stream: its sentences' texts in, and when each is heard out."""

    def __init__(
        self, hass: HomeAssistant, tts_entity_id: str, texts: Sequence[str] | None = None
    ) -> None:
        """Report on ``tts_entity_id``'s signal; ``texts``: the sentences, if known already."""
        self._hass = hass
        self._signal = signal_spoken(tts_entity_id)
        self._noted: list[str] = []
        self._texts: Sequence[str] = self._noted if texts is None else texts

    async def texts(self, sentences: AsyncIterator[str]) -> AsyncIterator[str]:
        """Pass the stream's sentences on, noting each one's text by its number."""
        async for sentence in sentences:
            if len(self._noted) < MAX_SENTENCES:
                self._noted.append(sentence)
            yield sentence

    async def audio(self, audio: AsyncGenerator[AudioChunk]) -> AsyncGenerator[AudioChunk]:
        """Pass the audio on; report each sentence as its first chunk begins to play."""
        loop = self._hass.loop
        timeline = AudioTimeline()
        current = -1
        try:
            async for chunk in audio:
                begins = timeline.handed(chunk, loop.time())
                if chunk.sentence != current:
                    current = chunk.sentence
                    if 0 <= current < len(self._texts):
                        report = SpokenReport(text=self._texts[current], heard_at=begins)
                        async_dispatcher_send(self._hass, self._signal, report)
                yield chunk
        finally:
            await audio.aclose()
