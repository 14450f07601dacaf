"""Where each sentence begins in an answer's audio, as the companion's voice makes it.

A device that knows how many seconds of an answer played (the companion's satellite)
needs to know which sentences those seconds held, to keep only what the person heard.
The voice knows: its audio comes sentence by sentence, numbered. A pipeline run that wants
the marks sets ``SPEECH_MARKS`` in its task; the run's TTS stream is made in tasks that
inherit it, and the voice ``add``s each chunk it streams. A voice that is not the
companion's leaves the marks empty, and the sentences heard are estimated instead.
"""

from __future__ import annotations

from contextvars import ContextVar

from .synthesizer import AudioChunk

MAX_SENTENCES = 256


class SentenceMarks:
    """The start, in seconds of audio, of each sentence of one answer."""

    def __init__(self) -> None:
        """Start with no audio."""
        self.starts: list[float] = []
        self._seconds = 0.0
        self._sentence: int | None = None

    def add(self, chunk: AudioChunk) -> None:
        """Count one chunk of the answer's audio, in the order it is streamed."""
        if chunk.sentence != self._sentence and len(self.starts) < MAX_SENTENCES:
            self.starts.append(self._seconds)
        self._sentence = chunk.sentence
        per_second = chunk.rate * chunk.width * chunk.channels
        self._seconds += len(chunk.audio) / per_second if per_second > 0 else 0.0


SPEECH_MARKS: ContextVar[SentenceMarks | None] = ContextVar("companion_speech_marks", default=None)
