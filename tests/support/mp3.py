"""Walking an MP3 stream frame by frame: what tests and benchmarks check MP3 with."""

from __future__ import annotations

MPEG2_KBPS = (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160)
"""MPEG-2 layer III bit rates by index (16, 22.05 and 24 kHz)."""
MPEG2_RATES = (22050, 24000, 16000)


def mp3_frames(data: bytes) -> list[int]:
    """Return each MPEG-2 layer III frame's offset; fail unless ``data`` is frames end to end."""
    offsets, at = [], 0
    while at + 4 <= len(data):
        assert data[at] == 0xFF, f"no frame sync at {at}"
        assert data[at + 1] & 0xE0 == 0xE0, f"no frame sync at {at}"
        kbps = MPEG2_KBPS[data[at + 2] >> 4]
        rate = MPEG2_RATES[(data[at + 2] >> 2) & 3]
        padding = (data[at + 2] >> 1) & 1
        offsets.append(at)
        at += 72 * kbps * 1000 // rate + padding
    assert at == len(data), "a frame is cut short"
    return offsets
