"""What every speech engine does: take sentences as they come, give their audio in order."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioChunk:
    """PCM audio of sentence number ``sentence``: ``width`` bytes a sample, interleaved."""

    kind: Literal["audio"] = "audio"
    sentence: int
    rate: int
    width: int
    channels: int
    audio: bytes


class Synthesizer(Protocol):
    """A voice that speaks each sentence as soon as it arrives, before it takes the next.

    Closing the generator stops it: no sentence is taken or spoken after that.
    """

    def synthesize(self, sentences: AsyncIterator[str]) -> AsyncGenerator[AudioChunk]:
        """Yield the audio of each non-empty sentence, in order, numbered from 0."""
        ...
