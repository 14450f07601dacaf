"""The TTS entity's text and audio: HA's text to speakable sentences, PCM chunks to WAV.

The reply's text runs through the engine's output pipeline, so the voice hears each
sentence's ``tts_text``: no markdown, URLs, emoji or action tags. Emotion tags are actions,
never words; the first sentence is cut as the turn cuts it, so a sentence spoken ahead of
HA's stream (``speech_start``) is found again.
"""

from __future__ import annotations

import io
import wave
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator

from ..const import EMOTIONS
from ..engine.events import SentenceOutput, TextDelta
from ..engine.pipeline import FIRST_CLAUSE_CUT, PipelineConfig, build_pipeline
from ..engine.speech import SPEECH_MARKS, AudioChunk

PIPELINE_CONFIG = PipelineConfig(action_tags=EMOTIONS, faster_first_response=FIRST_CLAUSE_CUT)


async def streamed_sentences(message_gen: AsyncIterator[str]) -> AsyncIterator[str]:
    """Yield the speakable sentences of HA's streamed text chunks, each once it is complete."""

    async def deltas() -> AsyncIterator[TextDelta]:
        """Wrap HA's text chunks as the pipeline's text deltas."""
        async for text in message_gen:
            yield TextDelta(text=text, model_text=text)

    async for sentence in _sentences(deltas()):
        yield sentence


async def message_sentences(message: str) -> AsyncIterator[str]:
    """Yield the speakable sentences of a whole message."""

    async def whole() -> AsyncIterator[TextDelta]:
        """Yield the whole message as one text delta."""
        yield TextDelta(text=message, model_text=message)

    async for sentence in _sentences(whole()):
        yield sentence


async def _sentences(deltas: AsyncIterator[TextDelta]) -> AsyncIterator[str]:
    """Yield each finished sentence's speakable text, skipping the empty ones."""
    async for item in build_pipeline(PIPELINE_CONFIG)(deltas):
        if isinstance(item, SentenceOutput) and item.tts_text:
            yield item.tts_text


async def wav_stream(audio: AsyncIterable[AudioChunk]) -> AsyncGenerator[bytes]:
    """Yield a streaming WAV header (no frame count) before the first PCM, then the PCM.

    A device that asked for the sentences' marks (``SPEECH_MARKS``) is told each chunk.
    """
    header_sent = False
    marks = SPEECH_MARKS.get()
    async for chunk in audio:
        if marks is not None:
            marks.add(chunk)
        if not header_sent:
            with io.BytesIO() as wav_io:
                _open_wav(wav_io, chunk).close()
                yield wav_io.getvalue()
            header_sent = True
        yield chunk.audio


async def whole_wav(audio: AsyncIterable[AudioChunk]) -> bytes | None:
    """Return all of ``audio`` as one WAV file, or None when there was none."""
    with io.BytesIO() as wav_io:
        wav_file: wave.Wave_write | None = None
        async for chunk in audio:
            if wav_file is None:
                wav_file = _open_wav(wav_io, chunk)
            wav_file.writeframes(chunk.audio)
        if wav_file is None:
            return None
        wav_file.close()
        return wav_io.getvalue()


def _open_wav(wav_io: io.BytesIO, chunk: AudioChunk) -> wave.Wave_write:
    """Open a WAV writer on ``wav_io`` in the chunk's format."""
    wav_file = wave.open(wav_io, "wb")  # noqa: SIM115 - the caller closes it
    wav_file.setframerate(chunk.rate)
    wav_file.setsampwidth(chunk.width)
    wav_file.setnchannels(chunk.channels)
    return wav_file
