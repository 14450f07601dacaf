"""The containers a voice's audio leaves in, made in this process: streaming WAV, MP3 (LAME)."""

import importlib
import io
import math
import struct
import wave
from collections.abc import AsyncIterator
from typing import Any

import pytest

from custom_components.companion_agent.engine.errors import AudioFormatError
from custom_components.companion_agent.engine.speech import AudioChunk
from custom_components.companion_agent.engine.speech.containers import (
    MP3,
    MP3_PIECE,
    WAV,
    as_16_bit,
    encoded,
    mp3_available,
    wav_header,
)
from tests.support.mp3 import mp3_frames

RATE = 22050
TONE = b"".join(
    struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / RATE))) for i in range(RATE)
)  # one second of A440


async def chunks(pcm: bytes, size: int = 2048, rate: int = RATE) -> AsyncIterator[AudioChunk]:
    """Yield ``pcm`` in chunks of ``size`` bytes, as a voice would."""
    for start in range(0, len(pcm), size):
        yield AudioChunk(
            sentence=0, rate=rate, width=2, channels=1, audio=pcm[start : start + size]
        )


async def test_a_wav_stream_states_no_length_and_carries_the_pcm_unchanged() -> None:
    data = b"".join([part async for part in encoded(chunks(TONE), WAV)])

    assert data[:44] == wav_header(RATE, 2, 1)
    assert struct.unpack_from("<I", data, 4)[0] == 0xFFFFFFFF  # as ffmpeg writes to a pipe
    assert struct.unpack_from("<I", data, 40)[0] == 0xFFFFFFFF
    with wave.open(io.BytesIO(data)) as reader:
        assert (reader.getframerate(), reader.getsampwidth(), reader.getnchannels()) == (RATE, 2, 1)
        assert reader.readframes(RATE * 2) == TONE


async def test_mp3_comes_out_frame_by_frame_as_the_audio_comes() -> None:
    assert mp3_available()
    parts = [part async for part in encoded(chunks(TONE), MP3)]
    data = b"".join(parts)

    frames = mp3_frames(data)
    assert len(parts) > 10  # streamed: not one piece at the end
    assert 38 <= len(frames) <= 42  # one second: 576 samples a frame (MPEG-2) at 22.05 kHz
    assert abs(len(data) - 64000 // 8) < 600  # 64 kb/s, constant


async def test_a_whole_sentence_in_one_chunk_is_encoded_in_pieces() -> None:
    """Three seconds in one chunk come out piece by piece: one part a piece, then LAME's tail."""
    sentence = TONE * 3
    parts = [part async for part in encoded(chunks(sentence, size=len(sentence)), MP3)]
    assert len(parts) == math.ceil(len(sentence) / MP3_PIECE) + 1
    assert 114 <= len(mp3_frames(b"".join(parts))) <= 126  # three seconds, frames end to end


async def test_a_chunk_in_another_format_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    async def mixed() -> AsyncIterator[AudioChunk]:
        yield AudioChunk(sentence=0, rate=RATE, width=2, channels=1, audio=TONE[:4410])
        yield AudioChunk(sentence=1, rate=16000, width=2, channels=1, audio=bytes(3200))
        yield AudioChunk(sentence=2, rate=RATE, width=2, channels=1, audio=TONE[4410:8820])

    data = b"".join([part async for part in encoded(mixed(), WAV)])
    assert data[44:] == TONE[:8820]
    assert "sentence 1" in caplog.text


async def test_no_audio_makes_no_container() -> None:
    assert [part async for part in encoded(chunks(b""), MP3)] == []
    assert [part async for part in encoded(chunks(b""), WAV)] == []


def test_other_sample_widths_become_16_bit() -> None:
    assert as_16_bit(bytes([128, 255, 0]), 1) == struct.pack("<3h", 0, 127 << 8, -128 << 8)
    assert as_16_bit(struct.pack("<2i", 1 << 30, -(1 << 30)), 4) == struct.pack(
        "<2h", 1 << 14, -(1 << 14)
    )
    assert as_16_bit(b"\x01\x02", 2) == b"\x01\x02"
    with pytest.raises(AudioFormatError):
        as_16_bit(b"\x00" * 6, 3)


def test_lameenc_is_one_encoder_per_stream() -> None:
    lameenc: Any = importlib.import_module("lameenc")  # no type information
    encoder = lameenc.Encoder()
    encoder.set_in_sample_rate(RATE)
    encoder.set_channels(1)
    encoder.encode(TONE)
    encoder.flush()
    with pytest.raises(RuntimeError):  # why ``encoded`` makes a new one for every stream
        encoder.encode(TONE)
