"""``Engine``: the one place the parts are put together, from one frozen ``EngineSettings``.

A host builds one ``Engine``, ``await engine.start()`` (plugins and profiles are loaded off
the loop, memory opened), builds a ``Persona`` per persona with ``persona()`` and starts
turns with ``start_turn(request) -> Turn``. The engine owns the guard and its held calls,
the audit log and the usage counters, the turn runner, every persona's conversations and
models (``personas.py``), memory, AI tasks (``tasks.py``), the speech head starts and the
follow-ups of conversations the companion started. ``close()`` lets running turns finish
(bounded) and writes and closes everything; ``stop()`` writes everything when the host
stops without unloading. Its data folder holds ``audit.jsonl``, ``conversations/<persona>/``
and memory's files (``memory/backends.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

import httpx

from .audit.log import AuditLog, Tee
from .errors import CompanionError, CorruptionReporter
from .guard.confirmations import (
    ConfirmationListener,
    ConfirmationResult,
    Confirmations,
    ConfirmationStatus,
    ConfirmationToken,
)
from .guard.confirmations.tokens import DEFAULT_TTL
from .guard.executor import Guard
from .guard.policy import PolicyRule
from .llm import LLMSettings
from .llm.models import ChatModels, ModelCall, RoundObserver
from .llm.roles import RoleChoice, RoleChoices
from .memory.backends import MemoryConfig, MemoryProblem, open_memory, unreachable
from .memory.companion import CompanionMemory
from .memory.hook import MemoryHook
from .personas import Personas, PersonaSetup
from .plugins import HostServices, Library, LoadProblem, load_library
from .speech.head_start import SpeechHeadStarts
from .tasks import TaskRequest, TaskResult, TaskRunner
from .turn.follow_ups import FollowUps
from .turn.handle import Turn
from .turn.limits import TurnLimits
from .turn.request import Persona, TurnRequest
from .turn.runner import TurnRunner
from .turn.stores import ConversationStores
from .turn.usage import UsageCounters

__all__ = [
    "ConfirmationResult",
    "ConfirmationStatus",
    "ConfirmationToken",
    "Engine",
    "EngineSettings",
    "MemoryProblem",
    "ModelCall",
    "PersonaSetup",
    "RoleChoice",
    "RoleChoices",
    "TaskRequest",
    "TaskResult",
    "TurnLimits",
]

AUDIT_FILE = "audit.jsonl"
CONVERSATIONS_FOLDER = "conversations"
TURN_GRACE = 5.0
FLUSH_GRACE = 10.0
MEMORY_CLOSE_GRACE = 5.0


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
    """Told each step of a held call (requested, executed, cancelled, expired, failed)."""
    on_model_round: RoundObserver | None = None
    """Told how each chat model round ended, so the host can follow the server's health."""
    on_bad_history: CorruptionReporter | None = None
    """Told of a conversation file that was moved aside (it was not what it should be)."""
    on_bad_memory_file: CorruptionReporter | None = None
    """Told of a memory file (store, outbox) that was moved aside."""
    personas: Mapping[str, PersonaSetup] = field(default_factory=lambda: MappingProxyType({}))
    """The personas known at ``start``: memory's queued work finds their models at once."""


class Engine:
    """The companion engine of one host: turns, their guard, their memory, their files."""

    def __init__(self, settings: EngineSettings) -> None:
        """Build every part from ``settings``; nothing is read or opened until ``start``."""
        self.settings = settings
        self._audit = AuditLog(settings.data_dir / AUDIT_FILE)
        self._usage = UsageCounters()
        audit = Tee(self._audit, self._usage)
        self._confirmations = Confirmations(
            ttl=settings.confirm_ttl, audit=audit, listener=settings.on_confirmation
        )
        guard = Guard(confirmations=self._confirmations, audit=audit, rules=settings.rules)
        self._runner = TurnRunner(guard, self._usage, settings.limits)
        self._models = ChatModels(settings.model, settings.http, settings.on_model_round)
        self._tasks = TaskRunner(settings.model, self._models)
        self._conversations = ConversationStores(
            settings.data_dir / CONVERSATIONS_FOLDER, on_corrupt=settings.on_bad_history
        )
        self._follow_ups = FollowUps()
        self._speech_starts = SpeechHeadStarts()
        self._library = Library()
        self._personas = Personas(self._models, settings.model)
        self._memory: CompanionMemory | None = None

    @property
    def library(self) -> Library:
        """Return the plugins and profiles loaded last."""
        return self._library

    @property
    def problems(self) -> list[LoadProblem]:
        """Return every plugin and profile problem: the library's and each persona's."""
        return [*self._library.problems, *self._personas.problems]

    @property
    def usage(self) -> UsageCounters:
        """Return the tokens and tool calls counted since the engine was built."""
        return self._usage

    @property
    def memory(self) -> CompanionMemory | None:
        """Return the open memory, or None (none configured, or it could not open)."""
        return self._memory

    @property
    def speech_starts(self) -> SpeechHeadStarts:
        """Return the first sentences synthesised ahead for the host's voices."""
        return self._speech_starts

    async def start(self) -> MemoryProblem | None:
        """Load plugins and profiles (off the loop) and open memory; say what did not answer.

        A memory that cannot open leaves memory off; one that opened but does not answer
        yet stays on (writes wait in its outbox). Turns answer either way.
        """
        self._library = await asyncio.to_thread(load_library, self.settings.library_roots)
        self._personas.bind_all(self._library, self.settings.personas)
        config = self.settings.memory
        if config is None:
            return None
        settings = self.settings
        try:
            memory = await open_memory(
                config,
                settings.data_dir,
                model=settings.model,
                http=settings.http,
                window_tokens=settings.limits.history_tokens,
                on_corrupt=settings.on_bad_memory_file,
                roles=self._personas.background,
            )
        except (CompanionError, OSError) as err:
            return MemoryProblem(detail=str(err), opened=False)
        self._memory = memory
        memory.start()
        if (problem := await unreachable(memory)) is not None:
            return MemoryProblem(detail=problem, opened=True)
        return None

    async def reload(self) -> None:
        """Load plugins and profiles again (off the loop) for new personas; keep good ones."""
        roots = self.settings.library_roots
        self._library = await asyncio.to_thread(load_library, roots, self._library)

    def persona(
        self, persona_id: str, profile_id: str, roles: RoleChoices | None = None
    ) -> Persona:
        """Build a persona snapshot: its profile (else the default one), plugins and models.

        Each role's model is ``roles``' choice, else the profile's, else the host's.
        """
        setup = PersonaSetup(profile_id=profile_id, roles=roles or RoleChoices())
        return self._personas.build(self._library, self.settings.host, persona_id, setup)

    def start_turn(self, request: TurnRequest) -> Turn:
        """Start a turn in a task of its own and return its handle at once.

        The turn continues its conversation (or, on a satellite that has just asked the
        person something, that conversation). A person's turn also reads and feeds memory:
        its rolling window is the history it is sent (unless it follows up a conversation
        the companion started), and it remembers the exchange; a proactive turn does not.
        """
        ctx = request.context
        now = asyncio.get_running_loop().time()
        history_id = self._follow_ups.history_id(ctx.conversation_id, request.satellite_id, now)
        history = self._conversations.store(ctx.agent_id).get(history_id)
        memory = self._memory
        if memory is None or request.initiator != "person":
            return self._runner.start(request, history)
        scope = memory.scope(ctx.agent_id, ctx.user_id)
        model = request.persona.memory_key or request.persona.profile.models.memory
        window = memory.window(scope, model) if history_id == ctx.conversation_id else None
        hook = MemoryHook(memory, scope, model)
        return self._runner.start(
            replace(request, host_hooks=(*request.host_hooks, hook)), history, window
        )

    async def generate(self, request: TaskRequest) -> TaskResult:
        """Answer an AI task (``tasks.py``); raise ``TaskError`` when it gets no usable answer."""
        return await self._tasks.run(request)

    def expect_answer(self, satellite_id: str, conversation_id: str) -> None:
        """Say ``satellite_id`` just asked the person something in ``conversation_id``.

        Its next turn, within a minute, continues that conversation (``TurnRequest``'s
        ``satellite_id``).
        """
        now = asyncio.get_running_loop().time()
        self._follow_ups.started(satellite_id, conversation_id, now)

    def pending_confirmation(self, token_id: str) -> ConfirmationToken | None:
        """Return the held call waiting under ``token_id``, if any."""
        return self._confirmations.peek(token_id)

    def pending_confirmations(self) -> list[ConfirmationToken]:
        """Return every held call still waiting for its answer, oldest first."""
        return self._confirmations.tokens.live()

    async def confirm(
        self, token_id: str, *, approve: bool, user_id: str | None
    ) -> ConfirmationResult:
        """Approve or deny a held call from outside a conversation (a dashboard, a phone)."""
        return await self._confirmations.resolve(token_id, approve=approve, user_id=user_id)

    async def figures(self) -> dict[str, object]:
        """Return what support needs to see: what is loaded, counted, held and open."""
        return {
            "profiles": sorted(profile.id for profile in self._library.profiles),
            "plugins": sorted(self._library.catalog.plugins),
            "problems": [str(problem) for problem in self.problems],
            "usage": self._usage.snapshot(),
            "pending_confirmations": self._confirmations.pending_count(),
            "open_conversations": self._conversations.open_counts(),
            "memory": await self._memory.figures() if self._memory is not None else None,
            "models": self._personas.background.figures(),
        }

    async def prune(self, retention: float) -> int:
        """Delete conversations (and memory's windows) idle longer than ``retention`` s."""
        removed = await self._conversations.prune(retention)
        if self._memory is not None:
            removed += await self._memory.prune(retention)
        return removed

    async def flush(self, grace: float = FLUSH_GRACE) -> None:
        """Write what is still in memory (turns, audit records), waiting ``grace`` s at most."""
        await self._conversations.flush(grace)
        await self._audit.flush(grace)

    async def stop(self) -> None:
        """Write everything and close memory (bounded): the host is stopping."""
        await self.flush()
        await self._close_memory()

    async def close(self) -> None:
        """Let running turns finish (bounded), then write and close everything."""
        await self._runner.drain(TURN_GRACE)
        self._confirmations.close()
        await self.flush()
        await self._close_memory()
        await self._audit.close()
        self._speech_starts.close()

    async def _close_memory(self) -> None:
        """Let the outbox drain a little, write the windows, close the store (bounded)."""
        memory, self._memory = self._memory, None
        if memory is not None:
            await memory.close(MEMORY_CLOSE_GRACE)
