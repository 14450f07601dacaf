"""A deterministic wake word program for wyoming-satellite's ``--wake-command``.

wyoming-satellite writes the microphone's raw audio to this program's stdin and takes every
line it prints as a detection of that wake word. This one drains the audio and prints the
wake word's name when a test asks: when the trigger file appears (it is removed at once, so
each file is one detection). It exits when the satellite closes its stdin.

Run with the satellite's own Python (3.11): ``python wake_program.py TRIGGER_FILE NAME``.
Standard library only.
"""

from __future__ import annotations

import os
import sys
import threading
import time

POLL_SECONDS = 0.01


def drain(done: threading.Event) -> None:
    """Read and drop the audio on stdin until it closes."""
    while os.read(sys.stdin.fileno(), 65536):
        pass
    done.set()


def main() -> None:
    """Print the wake word each time the trigger file appears, until stdin closes."""
    trigger, name = sys.argv[1], sys.argv[2]
    done = threading.Event()
    threading.Thread(target=drain, args=(done,), daemon=True).start()
    while not done.is_set():
        if os.path.exists(trigger):
            os.unlink(trigger)
            print(name, flush=True)
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    main()
