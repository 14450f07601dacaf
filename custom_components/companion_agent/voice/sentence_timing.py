"""When each sentence of one of our TTS streams begins to be heard: the card follows it.

A TTS stream hands its audio to HA as it is made, faster than it plays; the device plays
it in real time. ``SpokenSentences`` keeps that player's clock: a chunk begins playing when
the audio before it has played (or when it arrives, after a gap), so a sentence is heard
from the moment its first chunk begins. It tells the card (``signal_spoken`` of the TTS
entity) the sentence's speech text and that moment, as the chunk leaves the stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_send

from ..const import DOMAIN
from ..engine.speech import AudioChunk, chunk_seconds

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

    def __init__(self, hass: HomeAssistant, tts_entity_id: str) -> None:
        """Report on ``tts_entity_id``'s signal."""
        self._hass = hass
        self._signal = signal_spoken(tts_entity_id)
        self._texts: list[str] = []

    async def texts(self, sentences: AsyncIterator[str]) -> AsyncIterator[str]:
        """Pass the stream's sentences on, noting each one's text by its number."""
        async for sentence in sentences:
            if len(self._texts) < MAX_SENTENCES:
                self._texts.append(sentence)
            yield sentence

    async def audio(self, audio: AsyncGenerator[AudioChunk]) -> AsyncGenerator[AudioChunk]:
        """Pass the audio on; report each sentence as its first chunk begins to play."""
        loop = self._hass.loop
        played_until = 0.0
        current = -1
        try:
            async for chunk in audio:
                begins = max(played_until, loop.time())
                if chunk.sentence != current:
                    current = chunk.sentence
                    if 0 <= current < len(self._texts):
                        report = SpokenReport(text=self._texts[current], heard_at=begins)
                        async_dispatcher_send(self._hass, self._signal, report)
                played_until = begins + chunk_seconds(chunk)
                yield chunk
        finally:
            await audio.aclose()
