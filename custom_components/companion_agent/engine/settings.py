"""``EngineSettings``: everything an ``Engine`` needs from its host, fixed for its life."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import httpx

from .errors import CorruptionReporter
from .guard.confirmations import ConfirmationListener
from .guard.confirmations.tokens import DEFAULT_TTL
from .guard.policy import PolicyRule
from .llm import LLMSettings
from .llm.adapter import RoundObserver
from .memory.backends import MemoryConfig
from .personas import PersonaSetup
from .plugins import HostServices
from .turn.limits import TurnLimits


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineSettings:
    """Everything the engine needs from its host, fixed for the engine's life."""

    model: LLMSettings
    """The host's server and model: every role's default (profiles and personas change it)."""
    http: httpx.AsyncClient
    """The HTTP client every model (chat and memory) uses."""
    data_dir: Path
    library_roots: tuple[Path, ...]
    """Where plugins and profiles come from, built-in first (a later root wins)."""
    host: HostServices
    """What plugins get from the host: their data folder, time, HTTP, presence, states."""
    rules: tuple[PolicyRule, ...] = ()
    """The host's guard rules (which calls need a confirmation); profiles add marks."""
    confirm_ttl: float = DEFAULT_TTL
    limits: TurnLimits = field(default_factory=TurnLimits)
    memory: MemoryConfig | None = None
    """The memory to open at ``start``; None: no memory."""
    on_confirmation: ConfirmationListener | None = None
    """Told each step of a held call (requested, executed, failed, cancelled, expired, and
    interrupted when the engine closes or stops while it waits)."""
    notices_file: Path | None = None
    """Where this engine leaves, when it closes or stops, what the people of its held calls
    have not heard yet, for the next engine to read at ``start`` (one file per engine:
    engines may share ``data_dir``); None: nothing outlives the engine."""
    on_model_round: RoundObserver | None = None
    """Told how each chat model round ended, so the host can follow the server's health."""
    on_bad_history: CorruptionReporter | None = None
    """Told of a history file (the exchange store, an old one) that was moved aside."""
    on_bad_memory_file: CorruptionReporter | None = None
    """Told of a memory file (store, outbox) that was moved aside."""
    personas: Mapping[str, PersonaSetup] = field(default_factory=lambda: MappingProxyType({}))
    """The personas known at ``start``: memory's queued work finds their models at once."""
