"""A microphone from files for wyoming-satellite's ``--mic-command``, paced at real time.

wyoming-satellite reads raw audio from this program's stdout as fast as it comes, so a
plain ``cat`` would flood it. This one writes 16 kHz, 16-bit mono PCM at real time:
silence, and, whenever the cue file appears, the raw PCM it holds (the file is removed
once read), then silence again. It exits when the satellite stops reading.

Run with the satellite's own Python (3.11): ``python mic_program.py CUE_FILE``.
Standard library only.
"""

from __future__ import annotations

import os
import sys
import time

RATE = 16000
WIDTH = 2
CHUNK_SAMPLES = 1024
CHUNK_BYTES = CHUNK_SAMPLES * WIDTH
CHUNK_SECONDS = CHUNK_SAMPLES / RATE
SILENCE = bytes(CHUNK_BYTES)


def main() -> None:
    """Write silence, or the cued audio, one chunk at a time at real time."""
    cue = sys.argv[1]
    out = sys.stdout.buffer
    pending = b""
    start = time.monotonic()
    sent = 0
    while True:
        if not pending and os.path.exists(cue):
            with open(cue, "rb") as cued:
                pending = cued.read()
            os.unlink(cue)
        chunk, pending = pending[:CHUNK_BYTES], pending[CHUNK_BYTES:]
        try:
            out.write(chunk.ljust(CHUNK_BYTES, b"\0") if chunk else SILENCE)
            out.flush()
        except (BrokenPipeError, ValueError):
            return
        sent += 1
        delay = start + sent * CHUNK_SECONDS - time.monotonic()
        if delay > 0:
            time.sleep(delay)


if __name__ == "__main__":
    main()
