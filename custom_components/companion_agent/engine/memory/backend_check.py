"""The outcome of checking a memory backend's connection, for a host's setup form."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import MemoryBackendError, MemoryBackendProblem, MemoryStoreError


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendCheck:
    """Whether a backend answered; ``problem`` (None when it did) is a form's error key."""

    backend: str
    problem: MemoryBackendProblem | None = None
    detail: str = ""
    """What went wrong, for a log line (never a secret)."""

    @property
    def ok(self) -> bool:
        """Return whether the backend answered and accepted the credentials."""
        return self.problem is None

    @classmethod
    def failed(cls, err: MemoryStoreError, backend: str = "") -> BackendCheck:
        """Return the check that ``err`` ended (a store error of ``backend``'s, if not its own)."""
        if isinstance(err, MemoryBackendError):
            return cls(backend=err.backend, problem=err.problem, detail=str(err))
        problem: MemoryBackendProblem = "cannot_connect" if err.retryable else "failed"
        return cls(backend=backend, problem=problem, detail=str(err))
