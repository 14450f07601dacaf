"""The audio of our speech entities through a real HA, for tests: TTS streams and WAV, STT input.

``setup_voice`` sets up an entry whose only sub-entry is a Wyoming voice; ``stream`` streams a
text through its TTS entity in pieces, as a model's reply arrives, and ``wav_format`` and
``pcm`` read what came out. ``FIRST``, ``SECOND`` and ``THIRD`` are a reply of three sentences
the speech-start tests script. ``metadata`` is what the Assist pipeline tells our STT entity.
"""

from __future__ import annotations

import io
import wave
from collections.abc import AsyncGenerator

from homeassistant.components import stt
from homeassistant.components.tts.entity import TTSAudioRequest
from homeassistant.core import HomeAssistant

from custom_components.companion_agent.tts import CompanionTtsEntity
from tests.ha.common import VOICE, SetupCompanion, tts_entity, wyoming_voice

ADVERTISED_NOT_INSTALLED = "en_US-lessac-medium"
MESSY = (
    "## Hello **there**! 🎉 I found [the docs](https://example.com/docs) and "
    "https://example.com/x too. [joy] See you soon 😊."
)
CLEAN = ["Hello there!", "I found the docs and link too.", "See you soon."]
STREAMING_FRAMES = 0xFFFFFFFF // 2
"""What a WAV reader counts in a streaming header (sizes 0xFFFFFFFF, as ffmpeg writes them)."""
FIRST = "Good morning."
SECOND = "The kettle is on and the tea will be ready in a minute or two."
THIRD = "Biscuits are in the blue tin."


async def setup_voice(
    hass: HomeAssistant, setup_companion: SetupCompanion, host: str, port: int, voice: str = VOICE
) -> CompanionTtsEntity:
    """Set up an entry whose only sub-entry is a Wyoming voice; return its entity."""
    return tts_entity(hass, await setup_companion(wyoming_voice(host, port, voice)))


async def chunks(text: str, size: int = 7) -> AsyncGenerator[str]:
    """Yield ``text`` in pieces of ``size`` characters, as a model's stream would."""
    for start in range(0, len(text), size):
        yield text[start : start + size]


def wav_format(data: bytes) -> tuple[int, int, int, int]:
    """Return the rate, sample width, channels and frame count a WAV header states."""
    with wave.open(io.BytesIO(data), "rb") as reader:
        return (
            reader.getframerate(),
            reader.getsampwidth(),
            reader.getnchannels(),
            reader.getnframes(),
        )


async def stream(entity: CompanionTtsEntity, text: str) -> list[bytes]:
    """Return everything the entity's stream yields for ``text`` streamed in pieces."""
    response = await entity.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={}, message_gen=chunks(text))
    )
    assert response.extension == "wav"
    return [part async for part in response.data_gen]


def pcm(parts: list[bytes]) -> bytes:
    """Return the PCM of a streamed WAV: everything after its 44-byte header."""
    data = b"".join(parts)
    assert len(parts[0]) == 44
    return data[44:]


def metadata(language: str = "en") -> stt.SpeechMetadata:
    """Return what the Assist pipeline says about its audio: 16 kHz 16-bit mono PCM."""
    return stt.SpeechMetadata(
        language=language,
        format=stt.AudioFormats.WAV,
        codec=stt.AudioCodecs.PCM,
        bit_rate=stt.AudioBitRates.BITRATE_16,
        sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
        channel=stt.AudioChannels.CHANNEL_MONO,
    )
