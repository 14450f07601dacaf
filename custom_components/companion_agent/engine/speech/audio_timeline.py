"""When each sentence of an answer begins: as its audio was handed on, and in its audio.

``AudioTimeline``: when each sentence could have begun playing.

A voice notes every chunk of audio it hands on (to a device, or to the host's TTS stream
that a device reads) with the wall-clock time (``time.time()``) it did so. Audio cannot
play before it is handed on, nor two sentences at once: a chunk plays from when it was
handed on or when the audio before it ends, whichever is later. So the timeline knows, for
any moment, which sentences could have begun by then (a device that buffers or converts
only starts later) and when the audio handed on so far ends. Lengths are exact: they are
the audio's own.

``SentenceMarks``: where each sentence begins, in seconds of one answer's audio. A device
that knows how many seconds of an answer played (the companion's satellite) needs to know
which sentences those seconds held, to keep only what the person heard. The voice knows:
its audio comes sentence by sentence, numbered. The host hands the marks to the voice that
speaks the answer, which ``add``s each chunk it streams; a voice that is not the
companion's leaves them empty, and the sentences heard are estimated instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .synthesizer import AudioChunk

MAX_SENTENCES = 1024
"""More sentence starts than this are not noted (a turn's output is bounded far below)."""
MAX_MARKS = 256
"""More sentence marks than this are not kept (a device's answer is bounded far below)."""


def chunk_seconds(chunk: AudioChunk) -> float:
    """Return how long ``chunk`` plays."""
    per_second = chunk.rate * chunk.width * chunk.channels
    return len(chunk.audio) / per_second if per_second > 0 else 0.0


@dataclass(slots=True)
class AudioTimeline:
    """The starts of one answer's sentences, as its audio was handed on."""

    starts: list[tuple[int, float]] = field(default_factory=list)
    """Each sentence's number and the earliest time it could have begun playing."""
    seconds: float = 0.0
    """How many seconds of audio were handed on."""
    ends_at: float | None = None
    """When the audio handed on so far could have finished playing; None: none yet."""

    @property
    def begun_at(self) -> float | None:
        """Return when the first audio could have begun playing; None: none was handed on."""
        return self.starts[0][1] if self.starts else None

    def handed(self, chunk: AudioChunk, at: float) -> float:
        """Note that ``chunk`` was handed on at ``at``; return when it begins to play."""
        start = at if self.ends_at is None else max(at, self.ends_at)
        last = self.starts[-1][0] if self.starts else None
        if chunk.sentence != last and len(self.starts) < MAX_SENTENCES:
            self.starts.append((chunk.sentence, start))
        length = chunk_seconds(chunk)
        self.seconds += length
        self.ends_at = start + length
        return start

    def heard(self, at: float) -> int:
        """Return how many sentences could have been heard, at least in part, by ``at``.

        Counted up to the last sentence begun: one that came before it without audio (its
        synthesis failed) counts as passed.
        """
        begun = [sentence for sentence, start in self.starts if start <= at]
        return max(begun) + 1 if begun else 0

    def played_out(self, at: float, margin: float = 0.0) -> bool:
        """Say whether all the audio handed on could have played by ``at`` (less ``margin``)."""
        return self.ends_at is not None and at >= self.ends_at - margin

    def reset(self) -> None:
        """Forget everything: the answer is spoken again from its start (another voice)."""
        self.starts.clear()
        self.seconds = 0.0
        self.ends_at = None


class SentenceMarks:
    """The start, in seconds of audio, of each sentence of one answer."""

    def __init__(self) -> None:
        """Start with no audio."""
        self.starts: list[float] = []
        self._seconds = 0.0
        self._sentence: int | None = None

    def add(self, chunk: AudioChunk) -> None:
        """Count one chunk of the answer's audio, in the order it is streamed."""
        if chunk.sentence != self._sentence and len(self.starts) < MAX_MARKS:
            self.starts.append(self._seconds)
        self._sentence = chunk.sentence
        self._seconds += chunk_seconds(chunk)
